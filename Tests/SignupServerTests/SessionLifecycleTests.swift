import Foundation
import LiveSignupClient
import HTTPTestSupport
import XCTest

/// What happens over time and at the edges of a session's life: the stream's framing and
/// heartbeat, expiry, and shutting down with streams open.
final class SessionLifecycleTests: XCTestCase {
    func testStreamFramingRetryIDsAndHeartbeat() async throws {
        let server = try TestServer { $0.heartbeatIntervalSeconds = 0.2 }
        defer { server.stop() }
        let form = try await server.client.openForm()
        let connection = try RawHTTPConnection(port: server.app.port)
        // HTTP/1.0, so the body arrives as written, without chunked framing in between.
        connection.send("GET /events?token=\(form.token) HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n")
        XCTAssertTrue(connection.read { $0.contains("event: snapshot") && $0.contains("\n\n") })
        _ = try await form.edit("email", to: "ada@example.com")
        XCTAssertTrue(connection.read { $0.contains("event: requirement") && $0.hasSuffix("\n\n") })
        XCTAssertTrue(connection.read { $0.contains(": ping\n\n") }, "a comment heartbeat keeps the stream alive")

        let text = connection.received
        XCTAssertTrue(text.hasPrefix("HTTP/1.0 200 OK\r\n") || text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        XCTAssertTrue(text.lowercased().contains("content-type: text/event-stream"))
        XCTAssertTrue(text.contains("retry: 2000\n"))
        XCTAssertTrue(text.contains("id: 1\nevent: snapshot\ndata: {"))
        XCTAssertTrue(text.contains(#"id: 2\#nevent: requirement\#ndata: {"id":"email.format","rev":1,"state":"met"}"#))
    }

    func testIdleSessionIsDroppedAndItsTokenStartsAFreshOne() async throws {
        let clock = TestClock()
        let server = try TestServer {
            $0.sessionIdleLifetime = 30 * 60
            $0.clock = clock
        }
        defer { server.stop() }
        let idle = try await server.client.openForm()
        let active = try await server.client.openForm()
        _ = try await idle.edit("email", to: "idle@example.com")

        clock.advance(by: 20 * 60)
        _ = try await active.edit("email", to: "a@example.com")   // keeps `active` alive
        clock.advance(by: 11 * 60)
        // The sweep runs by the app's clock: moving it past the idle lifetime dropped the idle one.
        XCTAssertEqual(server.app.sessionCount, 1)
        XCTAssertEqual(server.app.removeExpiredSessions(), 0, "nothing left for a sweep now")

        // The page (which re-sends its values when it reconnects) gets a fresh session.
        let events = EventCollector(idle.events())
        let snapshot = await events.wait(forCount: 1)
        guard case .snapshot(let state) = snapshot[0] else { return XCTFail("expected a snapshot") }
        XCTAssertEqual(state.requirements["email.format"], .unmet, "a fresh session, not the dropped one")
        let stillThere = try await active.edit("email", to: "b@example.com")
        XCTAssertTrue(stillThere.applied)
    }

    func testATokenPastItsLifetimeAnswersNotFound() async throws {
        let clock = TestClock()
        let server = try TestServer {
            $0.formTokenLifetime = 24 * 60 * 60
            $0.clock = clock
        }
        defer { server.stop() }
        let old = try await server.client.openForm()
        clock.advance(by: 24 * 60 * 60 + 1)
        let edit = try await server.request("POST", "/fields", body: "token=\(old.token)&field=email&value=x&seq=1")
        XCTAssertEqual(edit.status, 404)
        XCTAssertTrue(edit.body.contains("unknown_session"))
        // A token this server never issued, likewise.
        let forged = String(old.token.dropLast()) + (old.token.hasSuffix("0") ? "1" : "0")
        let forgedEdit = try await server.request("POST", "/fields", body: "token=\(forged)&field=email&value=x&seq=1")
        XCTAssertEqual(forgedEdit.status, 404)
    }

    func testSessionWithAnOpenStreamDoesNotExpire() async throws {
        let clock = TestClock()
        let server = try TestServer { $0.clock = clock }
        defer { server.stop() }
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        clock.advance(by: 24 * 60 * 60)
        let edit = try await form.edit("email", to: "a@example.com")
        XCTAssertTrue(edit.applied)
    }

    func testStoppingEndsOpenStreamsInsteadOfHanging() async throws {
        let server = try TestServer()
        let form = try await server.client.openForm()
        let connection = try RawHTTPConnection(port: server.app.port)
        connection.send("GET /events?token=\(form.token) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        XCTAssertTrue(connection.read { $0.contains("event: snapshot") })
        server.stop()
        XCTAssertTrue(connection.readUntilClosed(), "the stream is ended, not left hanging")
    }
}

