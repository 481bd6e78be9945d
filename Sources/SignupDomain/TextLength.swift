import Foundation

/// How lengths are counted in every rule: Unicode code points after NFC normalisation, so
/// "é" counts once whether typed precomposed or as "e" plus a combining accent.
public enum TextLength {
    public static func codePoints(_ text: String) -> Int {
        text.canonicallyComposed.unicodeScalars.count
    }
}

extension String {
    /// The text in Unicode Normalization Form C, the form every rule compares and counts.
    /// ASCII text is already in it and is returned as it is: on Linux Foundation's
    /// `precomposedStringWithCanonicalMapping` goes through NSString and cost about 5 % of
    /// an edit when it ran for every field on every keystroke.
    public var canonicallyComposed: String {
        utf8.allSatisfy { $0 < 0x80 } ? self : precomposedStringWithCanonicalMapping
    }
}
