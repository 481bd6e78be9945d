import Foundation
import XCTest

/// Issue 58, on every template (the browser suite's pseudo-locale check sees only the pages
/// it visits): no text is assembled in a template. Between two tags, a value (`{{x}}`) stands
/// alone: no words, separator or punctuation beside it ("{{label}}: {{text}}", "{{t.x}} ·
/// {{y}}"); a sentence with values in it is one catalog text, filled in by the server. Values
/// side by side with nothing between are alternatives of a section (`{{#a}}…{{/a}}{{^a}}…`).
/// The same holds inside the attributes a person hears or reads (`aria-label`, `title`, `alt`,
/// `placeholder`).
final class TemplateTextTests: XCTestCase {
    func testNoTemplateGluesWordsOrSeparatorsToAValue() throws {
        let directory = TestServer.repositoryRoot.appendingPathComponent("Templates")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            // The plain-text mail is a layout of whole texts, one a paragraph; its "-- " is
            // the signature delimiter mail programs look for (RFC 3676), not words.
            .filter { $0.hasSuffix(".mustache") && $0 != "mail.txt.mustache" }.sorted()
        XCTAssertGreaterThanOrEqual(names.count, 15)
        var glued: [String] = []
        for name in names {
            var text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            text = text.replacing(#/\{\{!.*?\}\}/#.dotMatchesNewlines(), with: "")
            text = text.replacing(#/<(script|style)\b.*?</\1>/#.dotMatchesNewlines(), with: "")
            // The texts between tags, and the attributes a person hears or reads.
            let attributes = text.matches(of: #/(?:aria-label|title|alt|placeholder)="([^"]*)"/#).map { $0.output.1 }
            for segment in text.split(separator: #/<[^>]*>/#) + attributes {
                let withoutSections = segment.replacing(#/\{\{[#\/^][^}]*\}\}/#, with: "")
                let values = withoutSections.matches(of: #/\{\{\{?[^}]+\}?\}\}/#).count
                let words = withoutSections.replacing(#/\{\{\{?[^}]+\}?\}\}/#, with: "")
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                if values > 0, !words.isEmpty { glued.append("\(name): \(withoutSections.trimmingCharacters(in: .whitespacesAndNewlines))") }
            }
        }
        XCTAssertEqual(glued, [], "text assembled in a template: make it one catalog sentence with placeholders")
    }

    /// The page's scripts put no text together either: what they show or name (`textContent`,
    /// a text node, `aria-label`, `title`) is never built with `+` (the script takes a catalog
    /// pattern from the page, as the missing list's `data-text-missing-item`). Where a script
    /// builds text to show later, the pseudo-locale browser test reads the result.
    func testNoScriptPutsShownTextTogetherWithPlus() throws {
        let directory = TestServer.repositoryRoot.appendingPathComponent("Public")
        var glued: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path).filter({ $0.hasSuffix(".js") }).sorted() {
            let source = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            for (number, line) in source.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains(#/(textContent\s*=|createTextNode\(|setAttribute\("(aria-label|title)",)[^;]*\+/#) {
                glued.append("\(name):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        XCTAssertEqual(glued, [], "text put together in a script: take the language's pattern from the page")
    }
}
