/// A password as the password rules see it: NFC-normalised, with the words the person's own
/// details give away and its strength estimate (made once per edit, shared by every rule).
public struct PasswordCandidate: Sendable, Equatable {
    public let password: String
    public let context: ContextWords
    public let strength: PasswordStrength

    public init(password: String, context: ContextWords, strength: PasswordStrength) {
        self.password = password
        self.context = context
        self.strength = strength
    }
}
