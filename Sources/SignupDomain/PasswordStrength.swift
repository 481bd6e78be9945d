/// Estimates password strength. A protocol so tests and other estimators can stand in.
public protocol PasswordStrengthEstimating: Sendable {
    /// - Parameter userInputs: words the person's own details give away (username, email
    ///   parts, the site's name); a password built from them is weaker.
    func strength(of password: String, userInputs: [String]) -> PasswordStrength
}
