import Foundation

/// zxcvbn's verdict on a password.
public struct PasswordEstimate: Sendable, Hashable {
    /// How many guesses an attacker who knows the patterns needs, as a base-10 logarithm.
    public let guessesLog10: Double
    /// The parts of the password, in order.
    public let matches: [PasswordMatch]
    public let feedback: PasswordFeedback

    /// zxcvbn's 0–4 score: fewer than 10^3, 10^6, 10^8, 10^10 guesses (+5, as zxcvbn does
    /// so that a bound itself lands in the lower score), or more.
    public var score: Int {
        Self.score(guessesLog10: guessesLog10)
    }

    static func score(guessesLog10: Double) -> Int {
        let guesses = pow(10, guessesLog10)
        let bounds: [Double] = [1e3 + 5, 1e6 + 5, 1e8 + 5, 1e10 + 5]
        return bounds.firstIndex { guesses < $0 } ?? 4
    }
}
