import Foundation

/// A deliberately simple estimator: length × the variety of character classes used, with
/// known common passwords scored 0. Good enough to move a meter; it knows nothing about
/// words, keyboard walks or dates, so it overrates "Password1!".
public struct CharacterVarietyStrengthEstimator: PasswordStrengthEstimating {
    private let commonPasswords: CommonPasswords

    public init(commonPasswords: CommonPasswords = .builtIn) {
        self.commonPasswords = commonPasswords
    }

    public func strength(of password: String, userInputs: [String]) -> PasswordStrength {
        if password.isEmpty || commonPasswords.contains(password) { return .none }
        var hasLower = false, hasUpper = false, hasDigit = false, hasSymbol = false, hasOther = false
        var length = 0
        for scalar in password.unicodeScalars {
            length += 1
            switch scalar.value {
            case 0x61...0x7A: hasLower = true
            case 0x41...0x5A: hasUpper = true
            case 0x30...0x39: hasDigit = true
            case 0x20...0x7E: hasSymbol = true
            default: hasOther = true
            }
        }
        var pool = 0
        if hasLower { pool += 26 }
        if hasUpper { pool += 26 }
        if hasDigit { pool += 10 }
        if hasSymbol { pool += 33 }
        if hasOther { pool += 100 }
        let bits = Double(length) * log2(Double(pool))
        // Thresholds in bits for scores 1...4.
        let score = [28.0, 36, 60, 80].filter { bits >= $0 }.count
        return PasswordStrength(score: score)
    }
}
