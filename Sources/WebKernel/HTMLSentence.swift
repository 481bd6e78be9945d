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
        var markup: [(standIn: String, html: String)] = []
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            switch value {
            case .name(let text):
                let standIn = String(UnicodeScalar(standIns.lowerBound + UInt32(markup.count))!)
                words[name] = .text(standIn)
                let kept = MessageFormat.isolated(text).unicodeScalars.dropFirst().dropLast()
                markup.append((standIn, kept.isEmpty ? "" : "<bdi>" + escape(String(String.UnicodeScalarView(kept))) + "</bdi>"))
            case .date(let date):
                let standIn = String(UnicodeScalar(standIns.lowerBound + UInt32(markup.count))!)
                words[name] = .text(standIn)
                markup.append((standIn, "<time datetime=\"\(iso.string(from: date))\">" + escape(MessageFormat.date(date, language: tag)) + "</time>"))
            case .text(let text):
                // A stand-in inside a value would be taken for one of ours: the private-use
                // range they come from is never a value's own text.
                words[name] = .text(String(String.UnicodeScalarView(text.unicodeScalars.filter { !standIns.contains($0.value) })))
            case .number:
                words[name] = value
            }
        }
        var html = escape(MessageFormat.fill(template, words, language: tag))
        for (standIn, fragment) in markup { html = html.replacingOccurrences(of: standIn, with: fragment) }
        return html
    }

    /// Where the stand-ins come from: the start of the Private Use Area, one per marked value.
    private static let standIns: ClosedRange<UInt32> = 0xE000...0xE0FF

    /// Text for HTML, as Mustache's `{{…}}` writes it.
    package static func escape(_ text: String) -> String { PageRenderer.escapeAttribute(text) }

    /// ISO 8601 in UTC to the second: `<time datetime>`, what scripts and tests read.
    private static var iso: ISO8601DateFormatter { ISO8601DateFormatter() }
}
