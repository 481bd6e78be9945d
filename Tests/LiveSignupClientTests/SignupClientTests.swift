import XCTest
@testable import LiveSignupClient

/// The client's pure parts: error bodies, edit receipts and seq counters.
final class SignupClientTests: XCTestCase {
    // MARK: Error bodies

    func testHTTPErrorFromJSONBody() {
        let body = Data(#"{"error":"unknown_session","message":"This form has expired. Reload the page."}"#.utf8)
        XCTAssertEqual(
            SignupClientError.http(status: 404, body: body),
            .http(status: 404, code: "unknown_session", message: "This form has expired. Reload the page.")
        )
    }

    func testHTTPErrorToleratesExtraKeys() {
        let body = Data(#"{"error":"method_not_allowed","message":"Use POST.","allow":["POST"]}"#.utf8)
        XCTAssertEqual(SignupClientError.http(status: 405, body: body), .http(status: 405, code: "method_not_allowed", message: "Use POST."))
    }

    func testHTTPErrorFromNonJSONBody() {
        XCTAssertEqual(SignupClientError.http(status: 502, body: Data("  Bad gateway\n".utf8)), .http(status: 502, code: nil, message: "Bad gateway"))
        XCTAssertEqual(SignupClientError.http(status: 500, body: Data()), .http(status: 500, code: nil, message: nil))
        XCTAssertEqual(SignupClientError.http(status: 500, body: Data("{}".utf8)), .http(status: 500, code: nil, message: "{}"))
    }

    func testErrorDescriptions() {
        XCTAssertEqual(SignupClientError.http(status: 400, code: "invalid_seq", message: "seq must be a non-negative integer.").description, "HTTP 400 invalid_seq: seq must be a non-negative integer.")
        XCTAssertEqual(SignupClientError.http(status: 500, code: nil, message: nil).description, "HTTP 500")
        XCTAssertEqual(EventSourceError.badStatus(404, body: Data("{}".utf8)).description, "The event stream answered HTTP 404: {}")
    }

    // MARK: Edit receipts

    func testReceiptFromBody() throws {
        XCTAssertEqual(try FormSession.receipt(body: Data(#"{"rev":4,"applied":true}"#.utf8), revHeader: "4"), EditReceipt(rev: 4, applied: true))
        XCTAssertEqual(try FormSession.receipt(body: Data(#"{"rev":9,"applied":false}"#.utf8), revHeader: nil), EditReceipt(rev: 9, applied: false))
    }

    func testReceiptTakesRevFromHeaderWhenBodyLacksIt() throws {
        XCTAssertEqual(try FormSession.receipt(body: Data(#"{"applied":true}"#.utf8), revHeader: " 7 "), EditReceipt(rev: 7, applied: true))
    }

    func testReceiptWithoutRevOrAppliedIsInvalid() {
        XCTAssertThrowsError(try FormSession.receipt(body: Data(), revHeader: nil)) { error in
            guard case SignupClientError.invalidResponse = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try FormSession.receipt(body: Data(#"{"rev":3}"#.utf8), revHeader: "3")) { error in
            guard case SignupClientError.invalidResponse = error else { return XCTFail("\(error)") }
        }
    }

    // MARK: seq counters

    private func makeSession() -> FormSession {
        FormSession(client: SignupClient(baseURL: URL(string: "http://127.0.0.1:1")!), token: "t")
    }

    func testSeqCountsPerFieldFromOne() {
        let session = makeSession()
        XCTAssertEqual(session.nextSeq(for: "username"), 1)
        XCTAssertEqual(session.nextSeq(for: "username"), 2)
        XCTAssertEqual(session.nextSeq(for: "email"), 1)
        XCTAssertEqual(session.nextSeq(for: "username"), 3)
    }

    func testExplicitSeqMovesCounterForwardOnly() {
        let session = makeSession()
        session.recordSeq(5, for: "password")
        XCTAssertEqual(session.nextSeq(for: "password"), 6)
        session.recordSeq(2, for: "password")
        XCTAssertEqual(session.nextSeq(for: "password"), 7)
    }

    func testConcurrentEditsGetDistinctSeqs() async {
        let session = makeSession()
        let seqs = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask { session.nextSeq(for: "confirm") }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        XCTAssertEqual(seqs.sorted(), Array(1...200))
    }
}
