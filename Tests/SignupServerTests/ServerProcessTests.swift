import Foundation
import LiveSignupClient
import XCTest

/// The executable as an operator runs it.
final class ServerProcessTests: XCTestCase {
    func testPortZeroPicksAFreePortAndSIGTERMEndsStreamsAndExitsCleanly() async throws {
        let server = try ServerProcess()
        defer { server.removeData() }
        try await server.start()
        XCTAssertGreaterThan(server.port, 0)

        let form = try await SignupClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!).openForm()
        let connection = try RawHTTPConnection(port: server.port)
        connection.send("GET /events?token=\(form.token) HTTP/1.0\r\n\r\n")
        XCTAssertTrue(connection.read { $0.contains("event: snapshot") })

        let exited = await server.stop(with: SIGTERM)
        XCTAssertTrue(exited, "SIGTERM stops the server")
        XCTAssertEqual(server.process.terminationReason, .exit)
        XCTAssertEqual(server.process.terminationStatus, 0)
        XCTAssertTrue(connection.readUntilClosed(), "open streams are ended, not cut mid-event")
    }

    func testSIGINTAlsoStopsCleanly() async throws {
        let server = try ServerProcess()
        defer { server.removeData() }
        try await server.start()
        let exited = await server.stop(with: SIGINT)
        XCTAssertTrue(exited)
        XCTAssertEqual(server.process.terminationStatus, 0)
    }

    func testSeedDemoMarksDemoNamesTaken() async throws {
        let server = try ServerProcess(arguments: ["--seed-demo"])
        defer { server.removeData() }
        try await server.start()
        let form = try await SignupClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!).openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        _ = try await form.edit("username", to: "Alice")
        await events.wait { $0.contains { event in
            if case .requirement(id: "username.available", state: .unmet, _) = event { return true } else { return false }
        } }
    }
}
