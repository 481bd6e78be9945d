import Foundation
import HTTPTestSupport
import MicroHTTPD
import XCTest
import Locking

/// One client cannot take the server from others: connections per address are capped, and a
/// client that vanishes releases its event stream within one heartbeat without a thread each.
final class ClientAbuseTests: XCTestCase {
    struct StreamResponder: HTTPResponder {
        func respond(to request: HTTPRequest) -> HTTPResponse {
            switch request.path {
            case "/stream":
                return .eventStream(EventStream())
            case "/short-stream":
                // Ends at once; on HTTP/1.1 the connection stays open for the next request.
                let stream = EventStream()
                stream.send(data: "bye")
                stream.close()
                return .eventStream(stream)
            default:
                return .text("hello \(request.remoteAddress)")
            }
        }
    }

    /// A started stream server with no per-address cap and the given heartbeat; stop it.
    private func streamServer(heartbeatSeconds: Double) throws -> HTTPServer {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, perAddressConnectionLimit: 0, heartbeatIntervalSeconds: heartbeatSeconds),
            responder: StreamResponder())
        try server.start()
        return server
    }

    /// `count` clients, each with `GET /stream` sent.
    private func streamClients(_ count: Int, of server: HTTPServer) throws -> [RawHTTPConnection] {
        try (0..<count).map { _ in
            let client = try RawHTTPConnection(port: server.port)
            client.send("GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
            return client
        }
    }

    func testOneAddressHoldingManyConnectionsDoesNotShutOutAnother() throws {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, perAddressConnectionLimit: 50, idleTimeoutSeconds: 60),
            responder: StreamResponder())
        try server.start()
        defer { server.stop() }
        // 127.0.0.2 opens 300 idle connections, sending half a request line each (slowloris).
        var attacker: [RawHTTPConnection] = []
        for _ in 0..<300 {
            guard let connection = try? RawHTTPConnection(port: server.port, from: "127.0.0.2", timeoutSeconds: 2) else { continue }
            connection.send("GET / HT")
            attacker.append(connection)
        }
        XCTAssertEqual(attacker.count, 300)
        // Those over the cap are closed by the server at once, unanswered.
        let refused = { attacker.filter { $0.isClosedByServer && $0.received.isEmpty }.count }
        XCTAssertTrue(Condition.wait(timeout: 5) { refused() == 250 },
                      "\(refused()) of 300 connections closed; 250 beyond the cap of 50 expected")

        // Another address is served at once.
        let control = try RawHTTPConnection(port: server.port, from: "127.0.0.3", timeoutSeconds: 5)
        control.send("GET / HTTP/1.0\r\n\r\n")
        XCTAssertTrue(control.readUntilClosed())
        XCTAssertTrue(control.received.hasSuffix("hello 127.0.0.3"), control.received)
    }

    func testStreamClientsThatHangUpAreReleasedAtOnceNotAtTheNextHeartbeat() throws {
        let server = try streamServer(heartbeatSeconds: 600)
        defer { server.stop() }
        let clients = try streamClients(200, of: server)
        let control = try streamClients(1, of: server)[0]
        XCTAssertTrue(Condition.wait(timeout: 10) { server.openStreamCount == 201 }, "\(server.openStreamCount) streams open")
        for client in clients {
            XCTAssertTrue(client.read(timeout: 5) { $0.contains("\r\n\r\n") }, "the stream's headers arrived")
            client.closeNow()  // a clean close (FIN), as a closed tab does
        }
        // The heartbeat is 10 minutes away: only the hang-up watcher can release them now.
        XCTAssertTrue(Condition.wait(timeout: 10) { server.openStreamCount == 1 },
                      "\(server.openStreamCount - 1) streams of gone clients still open")
        control.readAvailable()
        XCTAssertFalse(control.isClosedByServer, "the live client's stream is untouched")
    }

    func testASecondStreamOnAKeepAliveConnectionIsWatchedToo() throws {
        let server = try streamServer(heartbeatSeconds: 600)
        defer { server.stop() }
        let client = try RawHTTPConnection(port: server.port)
        client.send("GET /short-stream HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertTrue(client.read(timeout: 5) { $0.contains("data: bye") && $0.hasSuffix("0\r\n\r\n") }, client.received)
        XCTAssertTrue(Condition.wait(timeout: 10) { server.openStreamCount == 0 }, "the short stream ended")
        client.send("GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertTrue(Condition.wait(timeout: 10) { server.openStreamCount == 1 }, "the second stream, same connection")
        XCTAssertFalse(client.isClosedByServer, "the connection was kept alive")
        client.closeNow()
        XCTAssertTrue(Condition.wait(timeout: 10) { server.openStreamCount == 0 },
                      "the second stream's client hung up and was noticed without a heartbeat")
    }

    /// The heartbeat can be sent now (tests drive it instead of waiting out its interval).
    func testAHeartbeatSentNowReachesEveryOpenStream() throws {
        let server = try streamServer(heartbeatSeconds: 600)
        defer { server.stop() }
        let clients = try streamClients(3, of: server)
        XCTAssertTrue(Condition.wait(timeout: 10) { server.openStreamCount == 3 })
        server.sendHeartbeatsNow()
        for client in clients {
            XCTAssertTrue(client.read(timeout: 5) { $0.contains(": ping\n\n") }, client.received)
        }
    }

    /// The heartbeat runs by the server's clock: moved past an interval, every stream gets
    /// its ping with no real time waited; before that, none; after a shutdown began, no more.
    func testTheHeartbeatRunsByTheServersClock() throws {
        let clock = TestClock()
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, perAddressConnectionLimit: 0, heartbeatIntervalSeconds: 15,
                                                   clock: clock),
            responder: StreamResponder())
        try server.start()
        defer { server.stop() }
        let clients = try streamClients(2, of: server)
        XCTAssertTrue(Condition.wait(timeout: 10) { server.openStreamCount == 2 })
        clock.advance(by: 14)
        XCTAssertFalse(clients[0].read(timeout: 0.3) { $0.contains(": ping") }, "no ping before its interval")
        clock.advance(by: 1)
        for client in clients {
            XCTAssertTrue(client.read(timeout: 5) { $0.contains(": ping\n\n") }, client.received)
        }
        XCTAssertEqual(clock.waiting, 1, "the next beat is scheduled")
        server.beginShutdown()
        clock.advance(by: 15)
        XCTAssertEqual(clock.waiting, 0, "a shutdown ends the beats")
    }

    func testKilledStreamClientsAreReleasedWithinOneHeartbeatWithFewThreads() throws {
        let server = try streamServer(heartbeatSeconds: 1)
        defer { server.stop() }
        let clients = try streamClients(300, of: server)
        // A live client, to see when the heartbeat has gone out.
        let control = try RawHTTPConnection(port: server.port)
        control.send("GET /stream HTTP/1.0\r\n\r\n")
        XCTAssertTrue(Condition.wait(timeout: 10) { server.openStreamCount == 301 }, "\(server.openStreamCount) streams open")
        let threadsBefore = ProcessStatus.threadCount()
        // Right after a heartbeat (1 s apart), every client dies. Each has read what it was
        // sent, as a browser has: a socket closed with unread data resets at once, which any
        // server notices; a clean close (FIN) is what a suspended stream does not see.
        XCTAssertTrue(control.read(timeout: 5) { $0.contains(": ping") })
        let seen = control.received.count
        for client in clients {
            client.readAvailable()
            client.closeNow()
        }
        // By the next heartbeat every dead client is released, not one beat later when a
        // write to it finally fails.
        XCTAssertTrue(control.read(timeout: 5) { $0.dropFirst(seen).contains(": ping") })
        XCTAssertTrue(Condition.wait(timeout: 0.5) { server.openStreamCount == 1 }, "\(server.openStreamCount - 1) dead streams still open")
        XCTAssertLessThan(ProcessStatus.threadCount(), threadsBefore + 16, "releasing streams did not spawn a thread each")
    }

    /// Every way a client can drop a connection, each released within a second, with the
    /// heartbeat (10 minutes) and the idle timeout (60 s) far away. libmicrohttpd alone kept
    /// the first kind until the idle timeout: 6,000 descriptors once, in a churn (issue 25).
    func testEveryKindOfDroppedConnectionIsReleasedWithinASecond() throws {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, perAddressConnectionLimit: 0, idleTimeoutSeconds: 60,
                                                   heartbeatIntervalSeconds: 600),
            responder: StreamResponder())
        try server.start()
        defer { server.stop() }
        let request = "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n"
        let ways: [(String, (RawHTTPConnection) -> Void)] = [
            ("closed mid-headers", { $0.send(String(request.prefix(20))); $0.closeNow() }),
            ("reset mid-headers", { $0.send(String(request.prefix(20))); $0.resetNow() }),
            ("closed right after the request", { $0.send(request); $0.closeNow() }),
            ("closed right after the stream's headers", { client in
                client.send(request)
                _ = client.read(timeout: 5) { $0.contains("\r\n\r\n") }
                client.closeNow()
            }),
            ("reset after the stream's headers", { client in
                client.send(request)
                _ = client.read(timeout: 5) { $0.contains("\r\n\r\n") }
                client.resetNow()
            }),
            ("a second stream request on the same keep-alive connection", { client in
                client.send(request + request)
                _ = client.read(timeout: 5) { $0.contains("\r\n\r\n") }
                client.closeNow()
            }),
            ("a stream after a page on the same connection", { client in
                client.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
                _ = client.read(timeout: 5) { $0.contains("hello") }
                client.send(request)
                client.closeNow()
            }),
            ("connected and closed without a byte", { $0.closeNow() }),
        ]
        let baseline = ProcessStatus.descriptorCount()
        for (way, drop) in ways {
            let clients = try (0..<50).map { _ in try RawHTTPConnection(port: server.port) }
            clients.forEach(drop)
            XCTAssertTrue(Condition.wait(timeout: 1) { ProcessStatus.descriptorCount() <= baseline },
                          "\(way): \(ProcessStatus.descriptorCount() - baseline) descriptors still open after a second")
        }
        XCTAssertTrue(Condition.wait(timeout: 1) { server.openStreamCount == 0 }, "\(server.openStreamCount) streams open")
    }
}

/// libmicrohttpd's messages sorted by whose doing they are: a client that went away is the
/// web working normally, anything else is the server's problem.
final class LibraryMessageTests: XCTestCase {
    func testAClientThatWentAwayIsToldApartFromAServerProblem() {
        // As libmicrohttpd 0.9.75 wrote them during a churn of dropped event streams.
        let clientGone = [
            "Failed to send the response headers for the request for `/events'. Error: The socket is no longer available for sending",
            "Failed to send the footers for the request for `/events'. Error: The connection was forcibly closed by remote peer",
            "Failed to send the chunked response body for the request for `/events'. Error: The connection was forcibly closed by remote peer",
            "Socket has been disconnected when reading request.",
            "Connection was closed by remote side with incomplete request.",
        ]
        for text in clientGone {
            XCTAssertTrue(LibraryMessage(text).isClientGone, text)
        }
        let problems = [
            "Failed to bind to port 8080: Address already in use",
            "Error accepting connection: Too many open files",
            "Failed to send the response body for the request for `/x'. Error: Not enough system resources to serve the request",
        ]
        for text in problems {
            XCTAssertFalse(LibraryMessage(text).isClientGone, text)
        }
        XCTAssertEqual(LibraryMessage(clientGone[1]).template, "Failed to send the footers for the request for ",
                       "what varies (the target, the error's words) is not part of the template")
    }

    func testDroppedStreamsReportOnlyClientsGone() throws {
        let messages = Locked<[LibraryMessage]>([])
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0, perAddressConnectionLimit: 0, heartbeatIntervalSeconds: 600,
                                                   errorLog: { message in messages.withLock { $0.append(message) } }),
            responder: ClientAbuseTests.StreamResponder())
        try server.start()
        defer { server.stop() }
        for index in 0..<200 {
            let client = try RawHTTPConnection(port: server.port)
            client.send("GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
            _ = client.read(timeout: 5) { $0.contains("\r\n\r\n") }
            if index.isMultiple(of: 2) { client.resetNow() } else { client.closeNow() }
        }
        XCTAssertTrue(Condition.wait(timeout: 2) { server.openStreamCount == 0 })
        let problems = messages.withLock { $0.filter { !$0.isClientGone } }
        XCTAssertEqual(problems.map(\.text), [], "a dropped stream is not a server problem")
    }
}
