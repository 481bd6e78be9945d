import Foundation

/// A pseudo-locale for tests (issue 46): English with every letter accented and each text
/// about 40 % longer, in brackets. A page in it shows at a glance any text left hard-coded
/// (plain English among the accents) and any layout that breaks on longer words (a cut-off
/// bracket). Placeholders and ICU's syntax are kept as they are, so it fills in like English.
public enum PseudoLocale {
    /// Its tag: a private-use region of English, no real language's.
    public static let tag = "en-xa"

    /// The pseudo-locale's catalog, made from English.
    public static func catalog(from english: TextCatalog) -> TextCatalog {
        TextCatalog(language: tag, name: "[Ƥşḗŭḓǿ]", direction: "ltr",
                    texts: english.texts.mapValues(transform), feedback: english.feedback.mapValues(transform))
    }

    /// One text: letters accented outside the protected parts, padded by 40 %, bracketed.
    public static func transform(_ text: String) -> String {
        guard !text.isEmpty else { return text }
        var result = ""
        var index = text.startIndex
        var letters = 0
        for match in text.matches(of: protectedParts()) {
            result += accented(text[index..<match.range.lowerBound], counting: &letters)
            result += text[match.range]
            index = match.range.upperBound
        }
        result += accented(text[index...], counting: &letters)
        let padding = String(repeating: "·", count: max(1, (letters * 2 + 4) / 5))
        return "[" + result + " " + padding + "]"
    }

    /// What must stay as written: an argument's head (`{name` and `, plural,`), a plural
    /// branch's keyword (`one {`, `=0 {`), closing braces, and `#`.
    private static func protectedParts() -> some RegexComponent { #/\{[a-z_]+(?:\s*,\s*(?:plural|select|selectordinal|number)\s*,?)?|(?:zero|one|two|few|many|other|=\d+)\s*\{|[}#]/# }

    private static func accented(_ part: Substring, counting letters: inout Int) -> String {
        var out = ""
        for character in part {
            if let replacement = accents[character] {
                out.append(replacement)
                letters += 1
            } else {
                out.append(character)
                if character.isLetter { letters += 1 }
            }
        }
        return out
    }

    private static let accents: [Character: Character] = {
        let plain = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        let marked = Array("áƀçđéƒğĥíĵķĺɱñóƥɋŕšţúṽŵẋýžÁƁÇĐÉƑĞĤÍĴĶĹṀÑÓƤɊŔŠŢÚṼŴẊÝŽ")
        return Dictionary(uniqueKeysWithValues: zip(plain, marked))
    }()
}
