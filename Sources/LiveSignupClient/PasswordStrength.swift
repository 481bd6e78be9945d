/// The password strength meter: a score from 0 to 4, its label (e.g. "Weak"), and for weak
/// passwords what is wrong and how to do better. `warning` and `suggestions` decode as empty
/// when a server does not send them.
public struct PasswordStrength: Decodable, Equatable, Hashable, Sendable {
    public var score: Int
    public var label: String
    public var warning: String
    public var suggestions: [String]

    public init(score: Int, label: String, warning: String = "", suggestions: [String] = []) {
        self.score = score
        self.label = label
        self.warning = warning
        self.suggestions = suggestions
    }

    private enum CodingKeys: String, CodingKey { case score, label, warning, suggestions }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        score = try container.decode(Int.self, forKey: .score)
        label = try container.decode(String.self, forKey: .label)
        warning = try container.decodeIfPresent(String.self, forKey: .warning) ?? ""
        suggestions = try container.decodeIfPresent([String].self, forKey: .suggestions) ?? []
    }
}
