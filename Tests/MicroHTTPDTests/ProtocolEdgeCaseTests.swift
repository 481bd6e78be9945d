import Foundation
import HTTPTestSupport
import MicroHTTPD
import XCTest
import Locking

/// Requests that are ambiguous or malformed get one well-formed answer and, where reading
/// on would be unsafe, a closed connection; the server keeps serving everyone else.
final class ProtocolEdgeCaseTests: XCTestCase {
    /// Echoes the decoded and raw path; `/stream` opens an event stream.
    struct EchoResponder: HTTPResponder {
        func respond(to request: HTTPRequest) -> HTTPResponse {
            if request.path == "/stream" {
                let stream = EventStream()
                stream.send(event: "hello", data: "{}")
                return .eventStream(stream)
            }
            if request.path == "/big-stream" {
                let stream = EventStream()
                stream.send(event: "big", data: String(repeating: "y", count: 20_000))
                stream.close()
                return .eventStream(stream)
            }
            let nul = request.path.contains("\u{0}") ? " (contains NUL)" : ""
            return .text("path=\(request.path)\(nul) raw=\(request.rawPath) from=\(request.remoteAddress)")
        }
    }

    private var server: HTTPServer!

    override func setUpWithError() throws {
        server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), responder: EchoResponder())
        try server.start()
    }

    override func tearDown() {
        server.stop()
    }

    /// Sends `request` on a fresh connection and reads until the server closes it.
    private func exchange(_ request: String) throws -> (text: String, closed: Bool) {
        let connection = try RawHTTPConnection(port: server.port)
        connection.send(request)
        let closed = connection.readUntilClosed()
        return (connection.received, closed)
    }

    private func statusLines(_ text: String) -> [Substring] {
        text.split(separator: "\r\n").filter { $0.hasPrefix("HTTP/1.") }
    }

    func testHTTP11WithoutHostIsRefused() throws {
        let answer = try exchange("GET / HTTP/1.1\r\n\r\n")
        XCTAssertTrue(answer.text.hasPrefix("HTTP/1.1 400 "), answer.text)
        XCTAssertTrue(answer.text.contains(#""error":"missing_host""#), answer.text)
        XCTAssertTrue(answer.closed)
        // HTTP/1.0 has no Host requirement.
        XCTAssertTrue(try exchange("GET / HTTP/1.0\r\n\r\n").text.contains(" 200 "))
    }

    func testChunkedWithContentLengthIsRefusedAndTheConnectionClosed() throws {
        // A smuggling attempt: the trailing request must never be answered.
        let answer = try exchange(
            "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n"
            + "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertTrue(answer.text.hasPrefix("HTTP/1.1 400 "), answer.text)
        XCTAssertTrue(answer.text.contains("conflicting_body_length"))
        XCTAssertEqual(statusLines(answer.text).count, 1, "exactly one answer: \(answer.text)")
        XCTAssertFalse(answer.text.contains("smuggled"))
        XCTAssertTrue(answer.closed)
    }

    func testUnknownTransferEncodingGets501AtOnce() throws {
        let connection = try RawHTTPConnection(port: server.port, timeoutSeconds: 3)
        connection.send("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n")
        // Not after an idle timeout: the read times out after 3 s if the answer does not come.
        XCTAssertTrue(connection.readUntilClosed(), "the server closed the connection")
        XCTAssertTrue(connection.received.hasPrefix("HTTP/1.1 501 "), connection.received)
        XCTAssertTrue(connection.received.contains("unsupported_transfer_encoding"))
    }

    func testEncodedNULAndDotsReachTheResponderUndecodedIntoOtherPaths() throws {
        let nul = try exchange("GET /static/app.js%00 HTTP/1.0\r\n\r\n").text
        XCTAssertTrue(nul.contains("(contains NUL)"), nul)
        XCTAssertTrue(nul.contains("raw=/static/app.js%00"), nul)
        let dot = try exchange("GET /static/app%2ejs HTTP/1.0\r\n\r\n").text
        XCTAssertTrue(dot.contains("path=/static/app.js raw=/static/app%2ejs"), dot)
        let plain = try exchange("GET /static/app.js?v=1 HTTP/1.0\r\n\r\n").text
        XCTAssertTrue(plain.contains("path=/static/app.js raw=/static/app.js from=127.0.0.1"), plain)
    }

    /// The client address (limits and the access line key on it) is the dotted form of the
    /// connection's source, for one-, two- and three-digit parts and zeros inside.
    func testTheClientAddressIsTheConnectionsSourceInDottedDecimal() throws {
        for address in ["127.0.0.1", "127.0.10.200", "127.100.0.9", "127.255.254.99", "127.1.20.0"] {
            let connection = try RawHTTPConnection(port: server.port, from: address)
            connection.send("GET /who HTTP/1.0\r\n\r\n")
            XCTAssertTrue(connection.readUntilClosed())
            XCTAssertTrue(connection.received.hasSuffix(" from=\(address)"), connection.received)
        }
    }

    func testHeadOfAnEventStreamHasHeadersAndNoBody() throws {
        let answer = try exchange("HEAD /stream HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(answer.text.hasPrefix("HTTP/1.1 200 "), answer.text)
        XCTAssertTrue(answer.text.contains("Content-Type: text/event-stream"))
        let body = answer.text.components(separatedBy: "\r\n\r\n").dropFirst().joined()
        XCTAssertEqual(body, "", "no body, not even a chunk terminator")
        XCTAssertEqual(server.openStreamCount, 0)
    }

    func testAPortInUseSaysSoInLibmicrohttpdsWords() throws {
        let messages = Locked<[String]>([])
        let second = HTTPServer(
            configuration: HTTPServerConfiguration(port: server.port, errorLog: { message in messages.withLock { $0.append(message.text) } }),
            responder: EchoResponder())
        XCTAssertThrowsError(try second.start()) { error in
            XCTAssertTrue("\(error)".lowercased().contains("in use"), "\(error)")
        }
        XCTAssertFalse(messages.withLock { $0.isEmpty }, "the error also went to the configured log")
    }

    /// The per-connection memory pool bounds the request headers: what fits is served, what
    /// does not gets 431 (not a hang or a reset), and a small pool does not stop an event
    /// stream from sending more than fits in it at once.
    func testHeadersBiggerThanTheConnectionMemoryGet431AndTheServerServesOn() throws {
        let small = HTTPServer(configuration: HTTPServerConfiguration(port: 0, connectionMemoryBytes: 8 * 1024),
                               responder: EchoResponder())
        try small.start()
        defer { small.stop() }
        func get(cookieBytes: Int) throws -> String {
            let connection = try RawHTTPConnection(port: small.port)
            connection.send("GET /hello HTTP/1.1\r\nHost: a\r\nConnection: close\r\nCookie: c=\(String(repeating: "x", count: cookieBytes))\r\n\r\n")
            _ = connection.readUntilClosed()
            return connection.received
        }
        XCTAssertTrue(try get(cookieBytes: 2_000).hasPrefix("HTTP/1.1 200 "))
        let refused = try get(cookieBytes: 12_000)
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 431 "), String(refused.prefix(200)))
        XCTAssertTrue(try get(cookieBytes: 100).hasPrefix("HTTP/1.1 200 "), "the next client is served")

        let stream = try RawHTTPConnection(port: small.port)
        stream.send("GET /big-stream HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(stream.readUntilClosed())
        let body = stream.received.components(separatedBy: "\r\n\r\n").dropFirst().joined()
        XCTAssertEqual(body.filter { $0 == "y" }.count, 20_000, "an event bigger than the pool arrives whole")
    }
}
