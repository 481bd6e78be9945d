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

    /// The key of the sentence that tells the person signing up (the catalog says it, in
    /// each language: `username.unsafe.*`).
    public var textKey: String {
        switch self {
        case .invisibleCharacter:
            return "username.unsafe.invisible"
        case .bidiControl:
            return "username.unsafe.bidi"
        case .mixedScripts:
            return "username.unsafe.mixed_scripts"
        case .mixedNumbers:
            return "username.unsafe.mixed_numbers"
        }
    }
}
