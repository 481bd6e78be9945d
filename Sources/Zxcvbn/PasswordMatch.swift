/// One part of a password as zxcvbn explains it: which pattern it follows and the text it
/// covers.
public struct PasswordMatch: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// No pattern: characters an attacker must brute-force.
        case bruteForce
        /// A word of zxcvbn's dictionaries (common passwords, English words, names, film and TV).
        case dictionaryWord
        /// A dictionary word with look-alike substitutions ("p4ssw0rd").
        case substitutedDictionaryWord
        /// One of the user inputs (username, email parts, site name).
        case userInput
        /// A user input with look-alike substitutions.
        case substitutedUserInput
        /// A character or group repeated ("aaaa", "abcabc").
        case repeated
        /// A run of consecutive characters ("abcd", "9876").
        case sequence
        /// Neighbouring keys on a keyboard ("qwerty", "zxcvbn").
        case keyboardPattern
        case date
        case year
        /// zxcvbn-c's allowance for very long passwords.
        case longPassword
        case other(Int)
    }

    public let kind: Kind
    /// The matched text.
    public let token: String
    /// True when this part repeats an earlier part of the password.
    public let isRepeatedPart: Bool
    /// Estimated guesses for this part alone, as a base-10 logarithm.
    public let guessesLog10: Double
}
