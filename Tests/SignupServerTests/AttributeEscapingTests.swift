@testable import SignupServer
@testable import WebKernel
import XCTest

/// Text put into a double-quoted HTML attribute (`return_to`, the proof-of-work challenge).
final class AttributeEscapingTests: XCTestCase {
    func testTheFiveMarkupCharactersAreEscapedAndNothingElse() {
        XCTAssertEqual(PageRenderer.escapeAttribute(#"<a href="x">Tom & Jerry's</a>"#),
                       "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;")
        let plain = "/welcome?lang=de&x=1"
        XCTAssertEqual(PageRenderer.escapeAttribute(plain), "/welcome?lang=de&amp;x=1")
        for text in ["", "plain", "ünïcödé 漢字 🇩🇪", "{\"algorithm\":\"SHA-256\"}"] {
            XCTAssertEqual(PageRenderer.escapeAttribute(text).replacingOccurrences(of: "&quot;", with: "\""), text)
        }
    }

    /// Bytes, not characters: a quote or ampersand followed by a combining mark is one
    /// Character ("\"" + U+0301), which a Character comparison let through unescaped, ending
    /// the attribute early.
    func testAMarkupCharacterFollowedByACombiningMarkIsStillEscaped() {
        XCTAssertEqual(PageRenderer.escapeAttribute("a\"\u{301} onmouseover=x"), "a&quot;\u{301} onmouseover=x")
        XCTAssertEqual(PageRenderer.escapeAttribute("&\u{301}"), "&amp;\u{301}")
    }
}
