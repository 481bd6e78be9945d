import Zxcvbn

/// The sign-up form's strength meter, from zxcvbn: its 0–4 score and, for weak passwords,
/// its warning and suggestions. Never bits of entropy.
public struct ZxcvbnStrengthEstimator: PasswordStrengthEstimating {
    private let estimator = ZxcvbnEstimator()

    public init() {}

    public func strength(of password: String, userInputs: [String]) -> PasswordStrength {
        let estimate = estimator.estimate(password, userInputs: userInputs)
        return PasswordStrength(score: estimate.score, warning: estimate.feedback.warning,
                                suggestions: estimate.feedback.suggestions)
    }
}
