/// How hard a password is to guess, on zxcvbn's familiar 0–4 scale.
public struct PasswordStrength: Sendable, Hashable, Codable {
    public let score: Int
    public let label: String

    public init(score: Int) {
        self.score = min(max(score, 0), 4)
        self.label = Self.labels[self.score]
    }

    public static let labels = ["Very weak", "Weak", "Fair", "Good", "Strong"]
    public static let none = PasswordStrength(score: 0)
}

/// Estimates password strength. A protocol so a better estimator can replace the simple one.
public protocol PasswordStrengthEstimating: Sendable {
    func strength(of password: String) -> PasswordStrength
}
