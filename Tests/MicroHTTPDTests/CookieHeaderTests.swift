import MicroHTTPD
import XCTest

/// The Cookie header is read as browsers and proxies read it: on bytes (RFC 6265 §5.4).
final class CookieHeaderTests: XCTestCase {
    func testCookiesAreReadByName() {
        let header = "theme=dark; livesignup_auth=abc; livesignup_auth=def;\tlang = fr"
        XCTAssertEqual(HTTPRequest.cookieValues(named: "livesignup_auth", in: header), ["abc", "def"])
        XCTAssertEqual(HTTPRequest.cookieValues(named: "theme", in: header), ["dark"])
        // The name is what comes before '=', spaces and all: "lang " is not "lang".
        XCTAssertEqual(HTTPRequest.cookieValues(named: "lang", in: header), [])
        XCTAssertEqual(HTTPRequest.cookieValues(named: "theme", in: nil), [])
    }

    /// Found by fuzzing (Tests/Fuzz/corpus/cookie/finding-greek-question-mark-splits): U+037E
    /// GREEK QUESTION MARK is canonically equal to ';' for Swift's Character, so a value of
    /// another cookie could be read as a session cookie no browser ever set.
    func testALookAlikeSemicolonDoesNotSplitACookie() {
        let header = "note=x\u{37E}livesignup_auth=planted"
        XCTAssertEqual(HTTPRequest.cookieValues(named: "livesignup_auth", in: header), [])
        XCTAssertEqual(HTTPRequest.cookieValues(named: "note", in: header), ["x\u{37E}livesignup_auth=planted"])
        // Nor does a no-break space trim: only spaces and tabs do.
        XCTAssertEqual(HTTPRequest.cookieValues(named: "livesignup_auth", in: "\u{A0}livesignup_auth=x"), [])
    }
}
