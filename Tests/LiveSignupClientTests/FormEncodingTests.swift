import XCTest
@testable import LiveSignupClient

/// `application/x-www-form-urlencoded` of the values a sign-up form can contain.
final class FormEncodingTests: XCTestCase {
    func testUnreservedCharactersAreKept() {
        XCTAssertEqual(FormURLEncoder.escape("AZaz09-._~"), "AZaz09-._~")
    }

    func testDelimitersAreEncoded() {
        XCTAssertEqual(FormURLEncoder.escape("a&b=c+d e"), "a%26b%3Dc%2Bd%20e")
    }

    func testPercentIsEncoded() {
        XCTAssertEqual(FormURLEncoder.escape("100%"), "100%25")
        XCTAssertEqual(FormURLEncoder.escape("%20"), "%2520")
    }

    func testUnicodeIsEncodedAsUTF8Bytes() {
        XCTAssertEqual(FormURLEncoder.escape("é"), "%C3%A9")
        XCTAssertEqual(FormURLEncoder.escape("日本"), "%E6%97%A5%E6%9C%AC")
        XCTAssertEqual(FormURLEncoder.escape("😀"), "%F0%9F%98%80")
        // Decomposed form stays decomposed: the encoder must not normalise.
        XCTAssertEqual(FormURLEncoder.escape("e\u{301}"), "e%CC%81")
    }

    func testOtherReservedAndControlCharactersAreEncoded() {
        XCTAssertEqual(FormURLEncoder.escape("!*'();:@$,/?#[]"), "%21%2A%27%28%29%3B%3A%40%24%2C%2F%3F%23%5B%5D")
        XCTAssertEqual(FormURLEncoder.escape("\r\n\t\0"), "%0D%0A%09%00")
        XCTAssertEqual(FormURLEncoder.escape("\"<>\\^`{|}"), "%22%3C%3E%5C%5E%60%7B%7C%7D")
    }

    func testEmptyString() {
        XCTAssertEqual(FormURLEncoder.escape(""), "")
        XCTAssertEqual(FormURLEncoder.encode([("value", "")]), "value=")
        XCTAssertEqual(FormURLEncoder.encode([]), "")
    }

    func testPairsKeepOrder() {
        XCTAssertEqual(FormURLEncoder.encode([("b", "2"), ("a", "1"), ("a", "x y")]), "b=2&a=1&a=x%20y")
    }

    func testRoundTripOfTrickyValues() throws {
        let values = ["a&b=c", "+", " ", "1+1=2", "%", "%41", "é日本😀", "p@ss w0rd!", "", "a=b=c", "&&", "~-._"]
        for value in values {
            let encoded = FormURLEncoder.encode([("value", value), ("k&=", value)])
            let decoded = try XCTUnwrap(FormURLEncoder.decode(encoded), encoded)
            XCTAssertEqual(decoded.map(\.name), ["value", "k&="], encoded)
            XCTAssertEqual(decoded.map(\.value), [value, value], encoded)
        }
    }

    func testDecodeAcceptsPlusAsSpace() {
        XCTAssertEqual(FormURLEncoder.decode("a=x+y%20z&b")?.map { "\($0.name)=\($0.value)" }, ["a=x y z", "b="])
    }

    func testDecodeRejectsMalformedInput() {
        XCTAssertNil(FormURLEncoder.decode("a=%G1"))
        XCTAssertNil(FormURLEncoder.decode("a=%4"))
        XCTAssertNil(FormURLEncoder.decode("a=%FF"), "not UTF-8")
    }

    func testEditBody() {
        let session = FormSession(client: SignupClient(baseURL: URL(string: "http://127.0.0.1:8080")!), token: "0123456789abcdef0123456789abcdef")
        XCTAssertEqual(
            session.body(field: "password", value: "p&ss=w+rd %é", seq: 3, touched: true),
            "token=0123456789abcdef0123456789abcdef&field=password&value=p%26ss%3Dw%2Brd%20%25%C3%A9&seq=3&touched=1"
        )
        XCTAssertEqual(
            session.body(field: "username", value: "", seq: 0, touched: false),
            "token=0123456789abcdef0123456789abcdef&field=username&value=&seq=0"
        )
    }

    func testEventsURL() {
        func eventsURL(base: String, token: String) -> String {
            FormSession(client: SignupClient(baseURL: URL(string: base)!), token: token).eventsURL.absoluteString
        }
        XCTAssertEqual(eventsURL(base: "http://127.0.0.1:8080", token: "abc"), "http://127.0.0.1:8080/events?token=abc")
        XCTAssertEqual(eventsURL(base: "http://127.0.0.1:8080/", token: "abc"), "http://127.0.0.1:8080/events?token=abc")
        XCTAssertEqual(eventsURL(base: "http://host/app/", token: "abc"), "http://host/app/events?token=abc")
        XCTAssertEqual(eventsURL(base: "http://host", token: "a+b&c=d e"), "http://host/events?token=a%2Bb%26c%3Dd%20e")
    }

    func testFieldsURL() {
        XCTAssertEqual(SignupClient(baseURL: URL(string: "http://127.0.0.1:8080")!).url(path: "fields").absoluteString, "http://127.0.0.1:8080/fields")
        XCTAssertEqual(SignupClient(baseURL: URL(string: "http://127.0.0.1:8080/")!).url(path: "fields").absoluteString, "http://127.0.0.1:8080/fields")
    }
}
