import ReactiveValidation

/// Remembers the last evaluation of each field, so an edit re-runs only the rules whose
/// inputs changed: typing the email does not re-check the username (the ICU spoof checker
/// is not free) or re-estimate the password. The password's inputs include the username and
/// email (its context words, inside `PasswordCandidate`), so editing those does re-check it.
/// One per view model; not thread-safe, like the view model.
public final class FormEvaluationCache {
    /// The username's inputs: the name and the latest availability answer.
    struct UsernameInput: Equatable {
        let value: String
        let answer: AsyncAnswer<String>?
    }

    /// The password's inputs: its candidate, the latest breach answer and, on a new-password
    /// form, the latest "not the current password" answer.
    struct PasswordInput: Equatable {
        let candidate: PasswordCandidate
        let answer: AsyncAnswer<PasswordCandidate>?
        var notCurrent: AsyncAnswer<PasswordCandidate>? = nil
    }

    /// The email's inputs: the address and the latest deliverability answer.
    struct EmailInput: Equatable {
        let value: String
        let answer: AsyncAnswer<String>?
    }

    let candidates = PasswordCandidateCache()
    // Used by one view model at a time (its owner's lock or queue), and no `compute` touches
    // the cache: no runtime exclusivity check per access (see DEVELOPMENT.md, "exclusivity").
    @exclusivity(unchecked) var username = Memo<UsernameInput, FieldEvaluation<String>>()
    @exclusivity(unchecked) var email = Memo<EmailInput, FieldEvaluation<String>>()
    @exclusivity(unchecked) var emailSuggestion = Memo<String, String?>()
    @exclusivity(unchecked) var password = Memo<PasswordInput, FieldEvaluation<PasswordCandidate>>()
    @exclusivity(unchecked) var confirm = Memo<PasswordConfirmation, FieldEvaluation<PasswordConfirmation>>()
    /// One per field the policy declares, in page order.
    @exclusivity(unchecked) private var declaredFields: [Memo<String, FieldEvaluation<String>>] = []

    public init() {}

    /// The evaluation of the policy's declared field number `slot` for `value`.
    func declared(_ slot: Int, value: String, compute: () -> FieldEvaluation<String>) -> FieldEvaluation<String> {
        if declaredFields.count <= slot {
            declaredFields += Array(repeating: Memo(), count: slot + 1 - declaredFields.count)
        }
        return declaredFields[slot].value(for: value, compute: compute)
    }
}

/// The last value computed, kept with the input it was computed from.
///
/// Input and output are kept apart rather than as one optional tuple: reading the tuple
/// copied input and output together through the tuple's generic value witnesses on every
/// keystroke, for each field (issue 24).
struct Memo<Input: Equatable, Output> {
    private var lastInput: Input?
    private var lastOutput: Output?

    mutating func value(for input: Input, compute: () -> Output) -> Output {
        if let lastOutput, lastInput == input { return lastOutput }
        let output = compute()
        lastInput = input
        lastOutput = output
        return output
    }
}
