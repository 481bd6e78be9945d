/// What a person is told about a weak password: the main problem and how to do better.
public struct PasswordFeedback: Sendable, Hashable {
    /// The main weakness, or "" when there is nothing specific to say.
    public let warning: String
    public let suggestions: [String]

    public init(warning: String, suggestions: [String]) {
        self.warning = warning
        self.suggestions = suggestions
    }

    public static let none = PasswordFeedback(warning: "", suggestions: [])
}
