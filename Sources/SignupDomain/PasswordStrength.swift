/// How hard a password is to guess, on zxcvbn's familiar 0–4 scale, with advice for weak ones.
public struct PasswordStrength: Sendable, Hashable, Codable {
    public let score: Int
    public let label: String
    /// What makes the password weak ("This is a commonly used password"), or "".
    public let warning: String
    /// How to make it stronger; empty for strong passwords.
    public let suggestions: [String]

    public init(score: Int, warning: String = "", suggestions: [String] = []) {
        self.score = min(max(score, 0), 4)
        self.label = Self.labels[self.score]
        self.warning = warning
        self.suggestions = suggestions
    }

    public static let labels = ["Very weak", "Weak", "Fair", "Good", "Strong"]
    public static let none = PasswordStrength(score: 0)
}

/// Estimates password strength. A protocol so tests and other estimators can stand in.
public protocol PasswordStrengthEstimating: Sendable {
    /// - Parameter userInputs: words the person's own details give away (username, email
    ///   parts, the site's name); a password built from them is weaker.
    func strength(of password: String, userInputs: [String]) -> PasswordStrength
}
