import Foundation
import HTTPTestSupport
@testable import MicroHTTPD
import XCTest
import Locking

/// A quiet event stream is written straight to its socket, in the chunks libmicrohttpd
/// would have made, instead of resuming the connection (which cost every edit a walk over
/// all suspended connections). What a client reads must not change: well-formed chunks,
/// every event once and in order, a slow reader served when it reads, a reader that stops
/// for good dropped without disturbing anyone else.
final class DirectStreamWriteTests: XCTestCase {
    /// `/stream` opens a stream the test then writes to; each is kept in order of opening.
    final class StreamResponder: HTTPResponder, @unchecked Sendable {
        private let lock = NSLock()
        private var opened: [EventStream] = []

        func respond(to request: HTTPRequest) -> HTTPResponse {
            guard request.path == "/stream" else { return .text("not a stream", status: .notFound) }
            let stream = EventStream()
            stream.send(event: "hello", data: "{}")
            lock.withLock { opened.append(stream) }
            return .eventStream(stream)
        }

        var streams: [EventStream] { lock.withLock { opened } }
    }

    private var responder: StreamResponder!
    private var server: HTTPServer!
    /// What libmicrohttpd logged: a dropped client must read as a client gone, not as a
    /// server problem.
    private let libraryMessages = Locked<[LibraryMessage]>([])

    override func setUpWithError() throws {
        responder = StreamResponder()
        let messages = libraryMessages
        server = HTTPServer(configuration: HTTPServerConfiguration(
            port: 0, errorLog: { message in messages.withLock { $0.append(message) } }), responder: responder)
        try server.start()
    }

    override func tearDown() {
        server.stop()
    }

    /// Opens `/stream`, reads its first event and waits until the stream has gone quiet
    /// (suspended), when writes go straight to the socket. Returns the connection and stream.
    private func openQuietStream(version: String = "HTTP/1.1", receiveBufferBytes: Int32? = nil)
        throws -> (RawHTTPConnection, EventStream) {
        let before = responder.streams.count
        let connection = try RawHTTPConnection(port: server.port, receiveBufferBytes: receiveBufferBytes)
        connection.send("GET /stream \(version)\r\nHost: localhost\r\n\r\n")
        XCTAssertTrue(connection.read { $0.contains("event: hello") }, connection.received)
        let stream = try XCTUnwrap(responder.streams.dropFirst(before).first)
        XCTAssertTrue(Condition.wait(timeout: 5) { stream.directWriteStatus.isSuspended }, "the stream never went quiet")
        if receiveBufferBytes != nil { stream.fixSocketSendBuffer(bytes: 8192) }
        return (connection, stream)
    }

    /// An HTTP/1.1 chunked body decoded strictly: every chunk's size line, its bytes and its
    /// CRLF. `wellFormed` is false at the first violation; a partial last chunk is not one
    /// (more may be on its way) and is left out of `body`.
    private func decodeChunks(_ received: String) -> (body: String, wellFormed: Bool, ended: Bool) {
        guard let headerEnd = received.range(of: "\r\n\r\n") else { return ("", true, false) }
        let bytes = Array(received[headerEnd.upperBound...].utf8)
        var body: [UInt8] = [], index = 0
        while index < bytes.count {
            guard let lineEnd = bytes[index...].firstIndex(of: UInt8(ascii: "\r")) else { break }
            guard lineEnd + 1 < bytes.count else { break }
            guard bytes[lineEnd + 1] == UInt8(ascii: "\n"),
                  let size = Int(String(decoding: bytes[index..<lineEnd], as: UTF8.self), radix: 16) else {
                return (String(decoding: body, as: UTF8.self), false, false)
            }
            if size == 0 { return (String(decoding: body, as: UTF8.self), true, true) }
            let dataStart = lineEnd + 2, dataEnd = dataStart + size
            guard dataEnd + 2 <= bytes.count else { break }
            guard bytes[dataEnd] == UInt8(ascii: "\r"), bytes[dataEnd + 1] == UInt8(ascii: "\n") else {
                return (String(decoding: body, as: UTF8.self), false, false)
            }
            body += bytes[dataStart..<dataEnd]
            index = dataEnd + 2
        }
        return (String(decoding: body, as: UTF8.self), true, false)
    }

    /// The `data:` of every `event: n` in a decoded body, in order.
    private func numberedEvents(_ body: String) -> [String] {
        body.components(separatedBy: "\n\n").compactMap { block in
            let lines = block.split(separator: "\n")
            guard lines.contains("event: n") else { return nil }
            return lines.first { $0.hasPrefix("data: ") }.map { String($0.dropFirst(6)) }
        }
    }

    func testAQuietStreamIsWrittenStraightToItsSocketInWellFormedChunks() throws {
        let (connection, stream) = try openQuietStream()
        let sent = (1...200).map { "\($0)-" + String(repeating: "x", count: $0 % 37) }
        // From two threads at once, as edits and heartbeats do: chunks never interleave.
        DispatchQueue.concurrentPerform(iterations: 2) { half in
            for (index, data) in sent.enumerated() where index % 2 == half {
                if half == 0 { stream.send(event: "n", data: data) } else { stream.sendComment("ping") }
            }
        }
        for data in sent.enumerated().filter({ $0.offset % 2 == 1 }).map(\.element) {
            stream.send(event: "n", data: data)
        }
        let expected = sent.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
            + sent.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        XCTAssertTrue(connection.read { self.numberedEvents(self.decodeChunks($0).body).count >= expected.count })
        let decoded = decodeChunks(connection.received)
        XCTAssertTrue(decoded.wellFormed, connection.received)
        XCTAssertEqual(numberedEvents(decoded.body), expected)
        XCTAssertEqual(decoded.body.components(separatedBy: ": ping\n\n").count - 1, 100)
        let status = stream.directWriteStatus
        XCTAssertEqual(status.directChunks, 300, "every write after the stream went quiet goes straight to the socket")
        XCTAssertTrue(status.isSuspended, "and libmicrohttpd was never woken for them")

        // Closing ends the response with libmicrohttpd's last chunk, after everything sent.
        stream.close()
        XCTAssertTrue(connection.read { self.decodeChunks($0).ended }, connection.received)
        XCTAssertTrue(decodeChunks(connection.received).wellFormed)
    }

    /// A chunk that fits the shim's 512-byte buffer is framed there and sent in one piece;
    /// a larger one goes out as three parts. Events on both sides of that line, and on it,
    /// arrive as well-formed chunks in order.
    func testChunksOnBothSidesOfTheOneBufferLimitAreWellFormed() throws {
        let (connection, stream) = try openQuietStream()
        // An event's chunk is its data plus the event line, the framing and its size line:
        // data of 440 to 560 bytes crosses 512 whatever the exact overhead.
        let sent = (440...560).map { length in "\(length)-" + String(repeating: "y", count: length) }
        for data in sent { stream.send(event: "n", data: data) }
        XCTAssertTrue(connection.read { self.numberedEvents(self.decodeChunks($0).body).count >= sent.count })
        let decoded = decodeChunks(connection.received)
        XCTAssertTrue(decoded.wellFormed, connection.received)
        XCTAssertEqual(numberedEvents(decoded.body), sent)
        XCTAssertEqual(stream.directWriteStatus.directChunks, sent.count, "each went straight to the socket")
    }

    func testASlowReaderGetsEveryEventInOrderOnceItReads() throws {
        let (connection, stream) = try openQuietStream(receiveBufferBytes: 4096)
        // Write until the socket stops taking bytes and some wait in the stream, then a
        // little more: those must follow once the reader catches up.
        var sent: [String] = [], total = 0, extra = 0
        let payload = String(repeating: "s", count: 200)
        while extra < 50, total < 200 * 1024 {
            let data = "\(sent.count)-\(payload)"
            stream.send(event: "n", data: data)
            sent.append(data)
            total += data.utf8.count + 20
            if stream.directWriteStatus.backlogBytes > 0 { extra += 1 }
        }
        XCTAssertEqual(extra, 50, "the socket never filled, so the backlog path went untested (sent \(total) bytes)")

        XCTAssertTrue(connection.read(timeout: 10) { self.numberedEvents(self.decodeChunks($0).body).count >= sent.count })
        let decoded = decodeChunks(connection.received)
        XCTAssertTrue(decoded.wellFormed)
        XCTAssertEqual(numberedEvents(decoded.body), sent)
        XCTAssertTrue(Condition.wait(timeout: 5) { stream.directWriteStatus.backlogBytes == 0 })

        // Caught up: the next event goes straight out again.
        stream.send(event: "n", data: "after")
        XCTAssertTrue(connection.read { self.numberedEvents(self.decodeChunks($0).body).last == "after" })
        XCTAssertFalse(stream.isClosed)
    }

    func testAReaderThatStopsReadingIsDroppedAndOtherStreamsGoOn() throws {
        let (stalled, stalledStream) = try openQuietStream(receiveBufferBytes: 4096)
        let (control, controlStream) = try openQuietStream()
        let payload = String(repeating: "z", count: 1000)
        var count = 0
        while !stalledStream.isClosed, count < 1000 {
            stalledStream.send(event: "n", data: "\(count)-\(payload)")
            count += 1
        }
        XCTAssertTrue(stalledStream.isClosed, "more than the pending limit waited and the stream stayed open")
        XCTAssertGreaterThan(count * 1000, EventStream.defaultPendingLimit)
        // The connection goes: reading now finds the bytes that made it, then its end.
        XCTAssertTrue(stalled.readUntilClosed(), "the stalled connection was never closed")
        XCTAssertTrue(Condition.wait(timeout: 5) { stalledStream.directWriteStatus.directChunks > 0 && self.server.openStreamCount == 1 },
                      "libmicrohttpd never let the dropped stream go")
        let logged = libraryMessages.withLock { $0 }
        // libmicrohttpd's last chunk fails on the shut-down socket, and says so.
        XCTAssertFalse(logged.isEmpty, "the drop went unlogged, so the check below checked nothing")
        for message in logged {
            XCTAssertTrue(message.isClientGone, "logged as a server problem: \(message.text)")
        }

        controlStream.send(event: "n", data: "still here")
        XCTAssertTrue(control.read { self.numberedEvents(self.decodeChunks($0).body) == ["still here"] }, control.received)
        XCTAssertTrue(decodeChunks(control.received).wellFormed)
    }

    func testAnHTTP10StreamIsLeftToLibmicrohttpd() throws {
        // HTTP/1.0 has no chunks: libmicrohttpd sends the body as it is, to the connection's end.
        let (connection, stream) = try openQuietStream(version: "HTTP/1.0")
        stream.send(event: "n", data: "one")
        stream.send(event: "n", data: "two")
        XCTAssertTrue(connection.read { $0.contains("data: two\n\n") }, connection.received)
        XCTAssertTrue(connection.received.contains("event: n\ndata: one\n\nevent: n\ndata: two\n\n"), connection.received)
        XCTAssertEqual(stream.directWriteStatus.directChunks, 0)
        stream.close()
        XCTAssertTrue(connection.readUntilClosed())
    }
}
