/// A field's value together with the state of each of its requirements for that value.
/// Evaluated in one step so the states never mix two different values.
public struct FieldEvaluation<Value: Equatable>: Equatable {
    public let value: Value
    /// In the order of the field's rules, the asynchronous rule (if any) last.
    public let states: [RequirementState]
    /// The message of the first failed `Check`, if any: the value is refused whatever the
    /// checklist says.
    public let failedCheckMessage: String?

    @inlinable public init(value: Value, states: [RequirementState], failedCheckMessage: String? = nil) {
        self.value = value
        self.states = states
        self.failedCheckMessage = failedCheckMessage
    }

    /// Every requirement met and no check failed.
    @inlinable public var allMet: Bool { failedCheckMessage == nil && states.allSatisfy { $0 == .met } }
}
