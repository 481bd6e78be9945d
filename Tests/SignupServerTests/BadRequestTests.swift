import Foundation
import LiveSignupClient
import XCTest

/// Every malformed request gets its own status and a readable JSON error, and harms no
/// other session.
final class BadRequestTests: XCTestCase {
    var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer()
    }

    override func tearDown() {
        server.stop()
    }

    private struct ErrorBody: Decodable {
        let error: String
        let message: String
    }

    private func assertError(
        _ response: (status: Int, headers: [String: String], body: String),
        status: Int, code: String, mentioning words: [String] = [],
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        XCTAssertEqual(response.status, status, response.body, file: file, line: line)
        XCTAssertEqual(response.headers["content-type"], "application/json", file: file, line: line)
        let body = try JSONDecoder().decode(ErrorBody.self, from: Data(response.body.utf8))
        XCTAssertEqual(body.error, code, file: file, line: line)
        XCTAssertFalse(body.message.isEmpty, file: file, line: line)
        for word in words {
            XCTAssertTrue(body.message.contains(word), "'\(body.message)' should mention '\(word)'", file: file, line: line)
        }
    }

    func testEachMissingParameterIsNamed() async throws {
        let form = try await server.client.openForm()
        let complete = ["token": form.token, "field": "email", "value": "x", "seq": "1"]
        for missing in complete.keys.sorted() {
            let body = complete.filter { $0.key != missing }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
            try assertError(try await server.request("POST", "/fields", body: body),
                            status: 400, code: "missing_parameter", mentioning: [missing])
        }
    }

    func testUnknownFieldListsTheKnownOnes() async throws {
        let form = try await server.client.openForm()
        try assertError(
            try await server.request("POST", "/fields", body: "token=\(form.token)&field=nickname&value=x&seq=1"),
            status: 400, code: "unknown_field", mentioning: ["nickname", "username", "confirm"])
    }

    func testBadSeqIsRejected() async throws {
        let form = try await server.client.openForm()
        for seq in ["x", "-1", "1.5", "", "99999999999999999999999"] {
            try assertError(
                try await server.request("POST", "/fields", body: "token=\(form.token)&field=email&value=x&seq=\(seq)"),
                status: 400, code: "invalid_seq", mentioning: ["seq"])
        }
    }

    func testUnknownTokenIsNotFound() async throws {
        try assertError(
            try await server.request("POST", "/fields", body: "token=0123456789abcdef0123456789abcdef&field=email&value=x&seq=1"),
            status: 404, code: "unknown_session")
        try assertError(try await server.request("GET", "/events?token=nope"), status: 404, code: "unknown_session")
        try assertError(try await server.request("GET", "/events"), status: 400, code: "missing_parameter", mentioning: ["token"])
    }

    func testClientHelperSurfacesTheServersError() async throws {
        let stranger = FormSession(client: server.client, token: "feedfacefeedfacefeedfacefeedface")
        do {
            _ = try await stranger.edit("email", to: "x")
            XCTFail("expected an error")
        } catch let error as SignupClientError {
            guard case .http(status: 404, code: "unknown_session", _) = error else { return XCTFail("\(error)") }
        }
    }

    func testBodyOverSixteenKiBIsRejected() async throws {
        let form = try await server.client.openForm()
        let value = String(repeating: "a", count: 16 * 1024)
        try assertError(
            // The HTTP layer stops reading past the limit: over a socket.
            try await server.request("POST", "/fields", body: "token=\(form.token)&field=email&value=\(value)&seq=1",
                                     over: .socket),
            status: 413, code: "body_too_large", mentioning: ["16 KiB"])
        // Just under the limit is fine.
        let fits = String(repeating: "a", count: 16 * 1024 - 100)
        let accepted = try await server.request("POST", "/fields", body: "token=\(form.token)&field=email&value=\(fits)&seq=1")
        XCTAssertEqual(accepted.status, 202)
    }

    func testWrongContentTypeAndMalformedBodies() async throws {
        let form = try await server.client.openForm()
        try assertError(
            try await server.request("POST", "/fields", body: #"{"token":"\#(form.token)"}"#, contentType: "application/json"),
            status: 415, code: "unsupported_media_type")
        try assertError(
            try await server.request("POST", "/fields", body: "token=\(form.token)&field=email&value=%zz&seq=1"),
            status: 400, code: "invalid_form")
        try assertError(
            try await server.request("POST", "/fields", body: "token=\(form.token)&field=email&value=%ff%fe&seq=1"),
            status: 400, code: "invalid_form", mentioning: ["UTF-8"])
    }

    func testWrongMethodsSayWhatIsAllowed() async throws {
        let getFields = try await server.request("GET", "/fields")
        try assertError(getFields, status: 405, code: "method_not_allowed")
        XCTAssertEqual(getFields.headers["allow"], "POST")
        let postPage = try await server.request("POST", "/", body: "a=b")
        try assertError(postPage, status: 405, code: "method_not_allowed")
    }

    func testBadRequestsLeaveOtherSessionsIntact() async throws {
        let bystander = try await server.client.openForm()
        _ = try await bystander.edit("email", to: "by@example.com")
        let victim = try await server.client.openForm()
        _ = try await server.request("POST", "/fields", body: "token=\(victim.token)&field=email&value=%zz&seq=1")
        _ = try await server.request("POST", "/fields", body: "token=\(bystander.token)&field=nope&value=x&seq=9")
        _ = try await server.request("POST", "/fields", body: "token=\(bystander.token)&field=email&value=x&seq=x")

        let events = EventCollector(bystander.events())
        let first = await events.wait(forCount: 1)
        guard case .snapshot(let snapshot) = first[0] else { return XCTFail("expected a snapshot") }
        XCTAssertEqual(snapshot.rev, 1)
        XCTAssertEqual(snapshot.requirements["email.format"], .met)
        let next = try await bystander.edit("email", to: "by@example.org")
        XCTAssertEqual(next, EditReceipt(rev: 2, applied: true))
    }
}
