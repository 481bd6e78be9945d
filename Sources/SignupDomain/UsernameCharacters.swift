/// Which characters a username may use: letters of any script, decimal digits of any script,
/// and a short list of symbols. A policy file sets it (`username.characters`).
public struct UsernameCharacters: Sendable, Hashable {
    /// Letters of any script (with their combining marks).
    public var letters: Bool
    /// Decimal digits of any script.
    public var digits: Bool
    /// Other characters allowed, each one exactly ("._-").
    public var symbols: String

    public init(letters: Bool = true, digits: Bool = true, symbols: String = "._-") {
        self.letters = letters
        self.digits = digits
        self.symbols = symbols
    }

    /// Letters, digits, ".", "-" and "_": the source articles' rule, and every preset's.
    public static let standard = UsernameCharacters()

    public func allows(_ username: String) -> Bool {
        username.unicodeScalars.allSatisfy { scalar in
            switch scalar.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                 .nonspacingMark, .spacingMark:
                return letters || symbols.unicodeScalars.contains(scalar)
            case .decimalNumber:
                return digits || symbols.unicodeScalars.contains(scalar)
            default:
                return symbols.unicodeScalars.contains(scalar)
            }
        }
    }
}
