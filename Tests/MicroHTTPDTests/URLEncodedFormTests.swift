import MicroHTTPD
import XCTest

final class URLEncodedFormTests: XCTestCase {
    private func decode(_ body: String) throws -> [String: String] {
        let form = try URLEncodedForm(decoding: Array(body.utf8))
        return Dictionary(form.fields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    func testDecodesPlusPercentAndUTF8() throws {
        XCTAssertEqual(try decode("a=1+2&b=%26%3D%2B&c=%C3%A9t%C3%A9&d=&e"),
                       ["a": "1 2", "b": "&=+", "c": "été", "d": "", "e": ""])
    }

    func testFirstValueWinsAndOrderIsKept() throws {
        let form = try URLEncodedForm(decoding: Array("x=1&y=2&x=3".utf8))
        XCTAssertEqual(form["x"], "1")
        XCTAssertEqual(form.fields.map(\.name), ["x", "y", "x"])
    }

    func testEmptyPairsAreSkippedAndAnEscapeMayEndTheBody() throws {
        XCTAssertEqual(try decode(""), [:])
        XCTAssertEqual(try URLEncodedForm(decoding: Array("&&a=%41&&=x&".utf8)).fields.map { "\($0.name)=\($0.value)" },
                       ["a=A", "=x"])
    }

    func testRejectsBrokenEscapesAndInvalidUTF8() {
        for body in ["a=%", "a=%4", "a=%zz", "a=%G0"] {
            XCTAssertThrowsError(try decode(body)) { XCTAssertEqual($0 as? URLEncodedForm.DecodingError, .invalidPercentEncoding, body) }
        }
        XCTAssertThrowsError(try decode("a=%ff")) { XCTAssertEqual($0 as? URLEncodedForm.DecodingError, .invalidUTF8) }
    }
}
