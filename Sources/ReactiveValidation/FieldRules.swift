/// A field's synchronous rules in priority order, plus what to say while it is empty.
public struct FieldRules<Value>: Sendable {
    public let rules: [Rule<Value>]
    /// Said instead of any rule's message while the field is empty, e.g. "Enter a username".
    public let emptyMessage: String?
    public let isEmpty: @Sendable (Value) -> Bool

    public init(rules: [Rule<Value>], emptyMessage: String?, isEmpty: @escaping @Sendable (Value) -> Bool) {
        self.rules = rules
        self.emptyMessage = emptyMessage
        self.isEmpty = isEmpty
    }

    public var requirements: [Requirement] { rules.map(\.requirement) }

    /// Whether every rule is met, without going through a publisher (e.g. a server-side check).
    public func allMet(by value: Value) -> Bool {
        rules.allSatisfy { $0.isMet(value) }
    }
}

extension FieldRules where Value == String {
    public init(rules: [Rule<String>], emptyMessage: String?) {
        self.init(rules: rules, emptyMessage: emptyMessage, isEmpty: { $0.isEmpty })
    }
}
