import XCTest
@testable import LiveSignupClient

/// Connection behaviour that needs no server. End-to-end streaming is covered by the
/// server's tests, which drive this client against the real thing.
final class EventSourceConnectionTests: XCTestCase {
    func testContentTypeCheckUsesTheMIMEEssence() {
        XCTAssertTrue(EventSourceDriver.isEventStream("text/event-stream"))
        XCTAssertTrue(EventSourceDriver.isEventStream("Text/Event-Stream; charset=utf-8"))
        XCTAssertTrue(EventSourceDriver.isEventStream(" text/event-stream ;x=y"))
        XCTAssertFalse(EventSourceDriver.isEventStream("text/event-streams"))
        XCTAssertFalse(EventSourceDriver.isEventStream("text/html"))
        XCTAssertFalse(EventSourceDriver.isEventStream("application/json; text/event-stream"))
        XCTAssertFalse(EventSourceDriver.isEventStream(""))
        XCTAssertFalse(EventSourceDriver.isEventStream(nil))
    }

    func testCloseBeforeStartFinishesTheStreamWithoutConnecting() async throws {
        let connection = EventSourceConnection(url: URL(string: "http://127.0.0.1:1/events")!)
        connection.close()
        var count = 0
        for try await _ in connection.events {
            count += 1
        }
        XCTAssertEqual(count, 0)
    }

    func testInitialValues() {
        let connection = EventSourceConnection(url: URL(string: "http://127.0.0.1:1/events")!, lastEventID: "17", reconnectionTime: .milliseconds(1500))
        XCTAssertEqual(connection.lastEventID, "17")
        XCTAssertEqual(connection.reconnectionTime, .milliseconds(1500))
        connection.close()
    }

    /// Port 1 on loopback refuses at once: each attempt fails, the connection retries, and the
    /// attempt limit ends the stream with `gaveUp` instead of retrying forever.
    func testRefusedConnectionIsRetriedThenGivenUp() async {
        let connection = EventSourceConnection(
            url: URL(string: "http://127.0.0.1:1/events")!,
            reconnectionTime: .milliseconds(5),
            maximumReconnectAttempts: 2
        )
        do {
            for try await event in connection.events {
                XCTFail("unexpected event \(event)")
            }
            XCTFail("the stream should fail")
        } catch EventSourceError.gaveUp(let attempts, _) {
            XCTAssertEqual(attempts, 3)
        } catch {
            XCTFail("unexpected error \(error)")
        }
    }
}
