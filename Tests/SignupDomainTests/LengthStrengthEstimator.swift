import Foundation
import SignupDomain

/// A predictable stand-in for zxcvbn in view model tests: one point per 4 characters, zero
/// for any password that contains one of the user inputs, with a warning below 2 points.
struct LengthStrengthEstimator: PasswordStrengthEstimating {
    func strength(of password: String, userInputs: [String]) -> PasswordStrength {
        if userInputs.contains(where: { password.lowercased().contains($0) }) {
            return PasswordStrength(score: 0, warning: "Based on your details", suggestions: ["Avoid your own details"])
        }
        let score = password.count / 4
        return score < 2
            ? PasswordStrength(score: score, warning: "Too short", suggestions: ["Add another word or two"])
            : PasswordStrength(score: score)
    }
}
