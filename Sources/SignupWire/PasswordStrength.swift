import FormWire

/// How hard a password is to guess, on zxcvbn's familiar 0–4 scale, its label (e.g. "Weak"),
/// and for weak passwords what is wrong and how to do better. `warning` and `suggestions`
/// decode as empty when a server does not send them.
public struct PasswordStrength: Codable, Equatable, Hashable, Sendable {
    public var score: Int
    public var label: String
    /// What makes the password weak ("This is a commonly used password"), or "".
    public var warning: String
    /// How to make it stronger; empty for strong passwords.
    public var suggestions: [String]

    /// A strength with the standard label for its (clamped) score.
    public init(score: Int, warning: String = "", suggestions: [String] = []) {
        let clamped = min(max(score, 0), 4)
        self.init(score: clamped, label: Self.labels[clamped], warning: warning, suggestions: suggestions)
    }

    /// A strength exactly as given (e.g. decoded from a server with other labels).
    public init(score: Int, label: String, warning: String = "", suggestions: [String] = []) {
        self.score = score
        self.label = label
        self.warning = warning
        self.suggestions = suggestions
    }

    public static let labels = ["Very weak", "Weak", "Fair", "Good", "Strong"]
    public static let none = PasswordStrength(score: 0)

    /// `{"label":…,"rev":…,"score":…,"suggestions":[…],"warning":…}`, keys sorted; `rev` only
    /// in the `strength` event, not inside a snapshot.
    public func write(to json: inout JSONWriter, rev: Int? = nil) {
        json.beginObject()
        json.key("label"); json.string(label)
        if let rev { json.key("rev"); json.int(rev) }
        json.key("score"); json.int(score)
        json.key("suggestions"); json.stringArray(suggestions)
        json.key("warning"); json.string(warning)
        json.endObject()
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
