/// A field's value together with the state of each of its requirements for that value.
/// Evaluated in one step so the states never mix two different values.
public struct FieldEvaluation<Value: Equatable>: Equatable {
    public let value: Value
    /// In the order of the field's rules, the asynchronous rule (if any) last.
    public let states: [RequirementState]

    public init(value: Value, states: [RequirementState]) {
        self.value = value
        self.states = states
    }

    public var allMet: Bool { states.allSatisfy { $0 == .met } }
}
