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
}
