import Foundation

/// How lengths are counted in every rule: Unicode code points after NFC normalisation, so
/// "é" counts once whether typed precomposed or as "e" plus a combining accent.
public enum TextLength {
    public static func codePoints(_ text: String) -> Int {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.utf8.count }  // ASCII: already NFC
        return text.precomposedStringWithCanonicalMapping.unicodeScalars.count
    }
}
