/// What a person is told about a weak password: the main problem and how to do better, as
/// text keys (`advice.*`) a catalog says in the person's language.
public struct PasswordFeedback: Sendable, Hashable {
    /// The main weakness's key, or "" when there is nothing specific to say.
    public let warning: String
    /// The keys of what would do better.
    public let suggestions: [String]

    public init(warning: String, suggestions: [String]) {
        self.warning = warning
        self.suggestions = suggestions
    }

    public static let none = PasswordFeedback(warning: "", suggestions: [])
}
