import Foundation
import HTTPTestSupport
import MicroHTTPD
import XCTest

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
}
