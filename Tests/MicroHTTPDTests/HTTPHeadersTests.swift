import MicroHTTPD
import XCTest

/// Header names match whatever their case; media types compare in their normal form.
final class HTTPHeadersTests: XCTestCase {
    func testLookupIgnoresTheCaseOfNamesOnly() {
        let headers = HTTPHeaders([("content-TYPE", "Text/Plain"), ("X-Rev", "1"), ("x-rev", "2")])
        XCTAssertEqual(headers["Content-Type"], "Text/Plain", "the value keeps its case")
        XCTAssertEqual(headers["X-REV"], "1", "the first of several")
        XCTAssertEqual(headers.values(of: "x-Rev"), ["1", "2"])
        XCTAssertNil(headers["Content-Typ"])
        XCTAssertNil(headers["Content-Typf"], "same length, different name")
        XCTAssertNil(HTTPHeaders([("Ä", "x")])["ä"], "only A–Z fold: header names are ASCII tokens")
    }

    func testTheMediaTypeIsTrimmedLowercasedAndWithoutParameters() {
        func mediaType(_ value: String?) -> String? {
            HTTPRequest(method: "POST", path: "/", headers: HTTPHeaders(value.map { [("Content-Type", $0)] } ?? []))
                .mediaType
        }
        XCTAssertEqual(mediaType(" Application/X-WWW-Form-URLEncoded ;charset=UTF-8"), "application/x-www-form-urlencoded")
        XCTAssertEqual(mediaType("\tapplication/json\t"), "application/json")
        XCTAssertEqual(mediaType("   "), "")
        XCTAssertEqual(mediaType(";charset=utf-8"), "")
        XCTAssertNil(mediaType(nil))
    }

    /// `hasMediaType` compares in place what `mediaType` would make: the same answer for
    /// every spelling (blanks, case, parameters, a type that only starts alike).
    func testHasMediaTypeAgreesWithTheMediaType() {
        let form = "application/x-www-form-urlencoded"
        let spellings: [String?] = [
            " Application/X-WWW-Form-URLEncoded ;charset=UTF-8", "application/x-www-form-urlencoded",
            "\tapplication/x-www-form-urlencoded\t", "application/x-www-form-urlencodedx",
            "application/x-www-form-urlencode", "application/json", "   ", ";charset=utf-8", "", nil,
        ]
        for spelling in spellings {
            let request = HTTPRequest(method: "POST", path: "/", headers: HTTPHeaders(spelling.map { [("Content-Type", $0)] } ?? []))
            XCTAssertEqual(request.hasMediaType(form), request.mediaType == form, String(describing: spelling))
        }
        XCTAssertTrue(HTTPRequest(method: "POST", path: "/", headers: HTTPHeaders([("content-type", "Application/X-WWW-Form-URLEncoded")]))
            .hasMediaType(form))
    }
}
