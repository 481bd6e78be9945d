import Foundation
import SignupDomain

/// A catalog sentence as HTML for a page, with markup inside it where the words alone are not
/// enough: a name someone supplied in `<bdi>` (its own direction, isolated from the sentence's),
/// a moment in `<time datetime="…">` (the language's date for people, ISO 8601 for programs).
/// The sentence stays whole in the catalog, so each language orders its parts its own way.
package enum HTMLSentence {
    /// `template` filled in for `language`, escaped, with each `.name` and `.date` value as
    /// markup. ICU fills the sentence first (plurals, numbers) with a stand-in for each marked
    /// value, one private-use character no catalog text contains; the result is escaped, then
    /// each stand-in is replaced by its markup.
    package static func fill(_ template: String, _ values: [String: MessageValue], language tag: String) -> String {
        var words: [String: MessageValue] = [:]
        var markup: [String] = []
        for (name, value) in values {
            switch value {
            case .name(let text):
                words[name] = .text(standIn(markup.count))
                let kept = MessageFormat.withoutDirectionControls(text)
                markup.append(kept.isEmpty ? "" : "<bdi>" + escape(kept) + "</bdi>")
            case .date(let date):
                words[name] = .text(standIn(markup.count))
                // Swift's own ISO 8601 style: an ISO8601DateFormatter made per date was a third
                // of the account page's time (issue 58).
                markup.append("<time datetime=\"\(date.ISO8601Format())\">" + escape(MessageFormat.date(date, language: tag)) + "</time>")
            case .text(let text):
                // A stand-in inside a value would be taken for one of ours: the private-use
                // range they come from is never a value's own text.
                words[name] = .text(String(String.UnicodeScalarView(text.unicodeScalars.filter { !standIns.contains($0.value) })))
            case .number:
                words[name] = value
            }
        }
        let escaped = escape(MessageFormat.fill(template, words, language: tag))
        guard !markup.isEmpty else { return escaped }
        // Each stand-in (three UTF-8 bytes, EE 80 80 and on) replaced by its markup, in one pass.
        var output: [UInt8] = []
        output.reserveCapacity(escaped.utf8.count + markup.reduce(0) { $0 + $1.utf8.count })
        let bytes = Array(escaped.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0xEE, index + 2 < bytes.count {
                let scalar = (UInt32(bytes[index] & 0x0F) << 12) | (UInt32(bytes[index + 1] & 0x3F) << 6) | UInt32(bytes[index + 2] & 0x3F)
                let position = Int(scalar) - Int(standIns.lowerBound)
                if standIns.contains(scalar), position < markup.count {
                    output.append(contentsOf: markup[position].utf8)
                    index += 3
                    continue
                }
            }
            output.append(bytes[index])
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The stand-in for the `index`th marked value.
    private static func standIn(_ index: Int) -> String { String(UnicodeScalar(standIns.lowerBound + UInt32(index))!) }

    /// Where the stand-ins come from: the start of the Private Use Area, one per marked value.
    private static let standIns: ClosedRange<UInt32> = 0xE000...0xE0FF

    /// Text for HTML, as Mustache's `{{…}}` writes it.
    package static func escape(_ text: String) -> String { PageRenderer.escapeAttribute(text) }

}
