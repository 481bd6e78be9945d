/// A condition that is not on the checklist but still blocks the form: something a person
/// rarely runs into (a pasted control character, a 2 KiB password) that would only clutter
/// the list as a line of its own, yet deserves a specific message when it happens.
public struct Check<Value>: Sendable {
    /// Names the check in logs and tests; never shown.
    public let id: String
    public let isPassed: @Sendable (Value) -> Bool
    public let message: @Sendable (Value) -> String

    public init(id: String, message: @escaping @Sendable (Value) -> String, isPassed: @escaping @Sendable (Value) -> Bool) {
        self.id = id
        self.isPassed = isPassed
        self.message = message
    }

    public init(id: String, message: String, isPassed: @escaping @Sendable (Value) -> Bool) {
        self.init(id: id, message: { _ in message }, isPassed: isPassed)
    }
}
