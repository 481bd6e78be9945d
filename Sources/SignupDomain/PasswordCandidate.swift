/// A password as the password rules see it: NFC-normalised, with the words the person's own
/// details give away and its strength estimate (made once per edit, shared by every rule).
///
/// A value with its parts behind one immutable reference: a candidate travels inside the
/// rules' generic types (`FieldEvaluation`, `AsyncAnswer`, the evaluation cache's keys), whose
/// copies go through value witnesses, and as a plain struct each copy retained its password,
/// both word lists and the estimate's strings one by one (issue 24). Nothing mutates a
/// candidate, so sharing the parts is safe.
public struct PasswordCandidate: Sendable, Equatable {
    private struct Parts: Equatable, Sendable {
        var password: String
        var context: ContextWords
        var strength: PasswordStrength
    }

    /// The reference the parts sit behind.
    private final class Shared: Sendable {
        let parts: Parts
        init(_ parts: Parts) { self.parts = parts }
    }

    private let shared: Shared

    public var password: String { shared.parts.password }
    public var context: ContextWords { shared.parts.context }
    public var strength: PasswordStrength { shared.parts.strength }

    public init(password: String, context: ContextWords, strength: PasswordStrength) {
        shared = Shared(Parts(password: password, context: context, strength: strength))
    }

    /// The same candidate (the cache hands out one per password and details) compares
    /// without looking at its parts; otherwise `Parts`' own equality, every part.
    public static func == (lhs: PasswordCandidate, rhs: PasswordCandidate) -> Bool {
        lhs.shared === rhs.shared || lhs.shared.parts == rhs.shared.parts
    }
}
