/// A synchronous validation rule: a requirement, the check that decides it, and the message
/// to show when it is the first unmet rule of its field.
public struct Rule<Value>: Sendable {
    public let requirement: Requirement
    public let isMet: @Sendable (Value) -> Bool
    public let message: @Sendable (Value) -> String

    public init(
        id: String,
        text: String,
        message: @escaping @Sendable (Value) -> String,
        isMet: @escaping @Sendable (Value) -> Bool
    ) {
        self.requirement = Requirement(id: id, text: text)
        self.isMet = isMet
        self.message = message
    }

    public init(id: String, text: String, message: String, isMet: @escaping @Sendable (Value) -> Bool) {
        self.init(id: id, text: text, message: { _ in message }, isMet: isMet)
    }

    @inlinable public var id: String { requirement.id }

    @inlinable public func state(for value: Value) -> RequirementState {
        isMet(value) ? .met : .unmet
    }

}
