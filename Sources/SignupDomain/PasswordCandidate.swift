/// A password as the password rules see it: NFC-normalised, with the words the person's own
/// details give away and its strength estimate (made once per edit, shared by every rule).
///
/// Its parts sit behind one reference (`SharedValue`): a candidate travels inside the rules'
/// generic types (`FieldEvaluation`, `AsyncAnswer`, the evaluation cache's keys), and as a
/// plain struct each copy retained its password, both word lists and the estimate's strings
/// one by one (issue 24). Equality is the synthesized one: the same candidate (the cache hands
/// out one per password and details) without looking at its parts, else every part.
public struct PasswordCandidate: Sendable, Equatable {
    private struct Parts: Equatable, Sendable {
        var password: String
        var context: ContextWords
        var strength: PasswordStrength
    }

    private let shared: SharedValue<Parts>

    public var password: String { shared.value.password }
    public var context: ContextWords { shared.value.context }
    public var strength: PasswordStrength { shared.value.strength }

    public init(password: String, context: ContextWords, strength: PasswordStrength) {
        shared = SharedValue(Parts(password: password, context: context, strength: strength))
    }
}
