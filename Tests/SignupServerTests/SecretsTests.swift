import Foundation
import LiveSignupClient
import Logging
import XCTest

/// Passwords and their hashes never appear in a log line or a response.
final class SecretsTests: XCTestCase {
    func testNoPasswordOrHashInAnyLogLineOrResponse() async throws {
        let lines = CapturedLog()
        var logger = Logger(label: "livesignup-test") { _ in CapturingLogHandler(lines: lines) }
        logger.logLevel = .trace
        let server = try TestServer(logger: logger)
        defer { server.stop() }
        let secret = "Tangerine-Walrus-42"
        var bodies: [String] = []

        let form = try await server.client.openForm()
        _ = try await form.edit("password", to: secret, touched: true)
        _ = try await form.edit("confirm", to: secret + "!", touched: true)
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        bodies.append(String(describing: events.events))
        let fields = { (password: String) in
            FormURLEncoder.encode([("token", form.token), ("username", "walrus"), ("email", "w@example.com"),
                                   ("password", password), ("confirm", password)])
        }
        bodies.append(try await server.request("POST", "/signup", body: fields("short")).body)
        bodies.append(try await server.request("POST", "/signup", body: fields(secret)).body)
        bodies.append(try await server.request(
            "POST", "/signin", body: FormURLEncoder.encode([("username", "walrus"), ("password", secret)])).body)
        bodies.append(try await server.request(
            "POST", "/signin", body: FormURLEncoder.encode([("username", "walrus"), ("password", secret + "x")])).body)

        let hash = try XCTUnwrap(try server.store.account(named: "walrus")?.passwordHash)
        XCTAssertFalse(lines.all.isEmpty, "the server did log")
        for text in lines.all + bodies {
            XCTAssertFalse(text.contains(secret), text)
            XCTAssertFalse(text.contains("Tangerine"), text)
            XCTAssertFalse(text.contains(hash), text)
            XCTAssertFalse(text.contains("$argon2id$"), text)
        }
    }
}

final class CapturedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private var loggedEvents: [LogEvent] = []

    var all: [String] { lock.withLock { lines } }
    /// The events themselves, for tests about a line's level, source or metadata.
    var events: [LogEvent] { lock.withLock { loggedEvents } }

    func append(_ line: String, event: LogEvent) {
        lock.withLock {
            lines.append(line)
            loggedEvents.append(event)
        }
    }
}

/// Keeps every log line, metadata included, as text, and its event.
struct CapturingLogHandler: LogHandler {
    let lines: CapturedLog
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let error = event.error.map { " \($0)" } ?? ""
        lines.append("\(event.level) \(event.message) \(metadata.merging(event.metadata ?? [:]) { $1 })\(error)", event: event)
    }
}
