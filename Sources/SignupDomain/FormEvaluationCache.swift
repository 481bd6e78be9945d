import ReactiveValidation

/// Remembers the last evaluation of each field, so an edit re-runs only the rules whose
/// inputs changed: typing the email does not re-check the username (the ICU spoof checker
/// is not free) or re-estimate the password. The password's inputs include the username and
/// email (its context words), so editing those does re-check it. One per view model; not
/// thread-safe, like the view model.
public final class FormEvaluationCache {
    let candidates = PasswordCandidateCache()
    private var username: (value: String, answer: AsyncAnswer<String>?, evaluation: FieldEvaluation<String>)?
    private var email: (value: String, evaluation: FieldEvaluation<String>)?
    private var password: (candidate: PasswordCandidate, evaluation: FieldEvaluation<PasswordCandidate>)?
    private var confirm: (value: PasswordConfirmation, evaluation: FieldEvaluation<PasswordConfirmation>)?

    public init() {}

    func username(_ value: String, answer: AsyncAnswer<String>?,
                  evaluate: () -> FieldEvaluation<String>) -> FieldEvaluation<String> {
        if let username, username.value == value, username.answer == answer { return username.evaluation }
        let evaluation = evaluate()
        username = (value, answer, evaluation)
        return evaluation
    }

    func email(_ value: String, evaluate: () -> FieldEvaluation<String>) -> FieldEvaluation<String> {
        if let email, email.value == value { return email.evaluation }
        let evaluation = evaluate()
        email = (value, evaluation)
        return evaluation
    }

    func password(_ candidate: PasswordCandidate,
                  evaluate: () -> FieldEvaluation<PasswordCandidate>) -> FieldEvaluation<PasswordCandidate> {
        if let password, password.candidate == candidate { return password.evaluation }
        let evaluation = evaluate()
        password = (candidate, evaluation)
        return evaluation
    }

    func confirm(_ value: PasswordConfirmation,
                 evaluate: () -> FieldEvaluation<PasswordConfirmation>) -> FieldEvaluation<PasswordConfirmation> {
        if let confirm, confirm.value == value { return confirm.evaluation }
        let evaluation = evaluate()
        confirm = (value, evaluation)
        return evaluation
    }
}
