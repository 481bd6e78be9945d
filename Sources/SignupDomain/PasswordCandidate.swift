/// A password as the password rules see it: NFC-normalised, with the words the person's own
/// details give away and its strength estimate (made once per edit, shared by every rule).
///
/// A value with its parts behind one immutable reference: a candidate travels inside the
/// rules' generic types (`FieldEvaluation`, `AsyncAnswer`, the evaluation cache's keys), whose
/// copies go through value witnesses, and as a plain struct each copy retained its password,
/// both word lists and the estimate's strings one by one (issue 24). Nothing mutates a
/// candidate, so sharing the parts is safe.
public struct PasswordCandidate: Sendable, Equatable {
    private final class Parts: Sendable {
        let password: String
        let context: ContextWords
        let strength: PasswordStrength

        init(password: String, context: ContextWords, strength: PasswordStrength) {
            self.password = password
            self.context = context
            self.strength = strength
        }
    }

    private let parts: Parts

    public var password: String { parts.password }
    public var context: ContextWords { parts.context }
    public var strength: PasswordStrength { parts.strength }

    public init(password: String, context: ContextWords, strength: PasswordStrength) {
        parts = Parts(password: password, context: context, strength: strength)
    }

    /// The same candidate (the cache hands out one per password and details) compares
    /// without looking at its parts.
    public static func == (lhs: PasswordCandidate, rhs: PasswordCandidate) -> Bool {
        lhs.parts === rhs.parts
            || (lhs.password == rhs.password && lhs.context == rhs.context && lhs.strength == rhs.strength)
    }
}
