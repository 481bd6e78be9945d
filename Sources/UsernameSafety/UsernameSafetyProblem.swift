/// Why a username is unsafe to show to other people or to compare with other names.
public enum UsernameSafetyProblem: Sendable, Hashable {
    /// A character that shows as nothing: zero-width space or joiner, soft hyphen,
    /// variation selector, other default-ignorable or format characters.
    case invisibleCharacter
    /// A character that reorders the text around it (U+202A–202E, U+2066–2069, U+200E/F, U+061C).
    case bidiControl
    /// Letters from scripts that are not normally mixed and have look-alikes, such as a
    /// Cyrillic "а" among Latin letters ("pаypal").
    case mixedScripts
    /// Digits from different number systems, such as Latin "1" beside Arabic-Indic "١".
    case mixedNumbers

    /// One sentence for the person signing up.
    public var message: String {
        switch self {
        case .invisibleCharacter:
            return "Username contains an invisible character. Type it again without copying and pasting"
        case .bidiControl:
            return "Username contains a character that changes the text direction. Type it again without copying and pasting"
        case .mixedScripts:
            return "Username can't mix letters from different alphabets, like Latin and Cyrillic"
        case .mixedNumbers:
            return "Username can't mix digits from different number systems"
        }
    }
}
