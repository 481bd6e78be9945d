import Foundation
import Logging
import SignupServer
import XCTest

/// The access line written straight from its values is the line swift-log's text format
/// writes for its metadata, and the swift-log path carries the same metadata.
final class AccessLineTests: XCTestCase {
    private let lines = [
        AccessLine(method: "POST", route: "/fields", status: 202, durationMilliseconds: "0.42",
                   client: "127.0.3.4", token: "a1b2c3"),
        AccessLine(method: "GET", route: "/", status: 429, durationMilliseconds: "12.05", client: "2001:db8::1", token: nil),
    ]

    /// StreamLogHandler's text (swift-log's own format): each `key=value` sorted by key, then
    /// the source in brackets and the message.
    private func swiftLogText(_ metadata: Logger.Metadata, source: String, message: Logger.Message) -> String {
        let pairs = metadata.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        return "\(pairs) [\(source)] \(message)"
    }

    func testTheDirectTextIsSwiftLogsTextForTheSameMetadata() {
        for line in lines {
            var bytes: [UInt8] = []
            line.appendText(to: &bytes)
            XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                           swiftLogText(line.metadata, source: AccessLine.source, message: AccessLine.message))
        }
        XCTAssertEqual(Set(lines[0].metadata.keys), ["method", "route", "status", "duration_ms", "client", "token"])
        XCTAssertNil(lines[1].metadata["token"], "no token key without a token")
    }

    func testTheLoggerPathSendsAnInfoEventWithTheLinesMetadata() {
        let captured = CapturedEvents()
        var logger = Logger(label: "livesignup.access") { _ in CapturingHandler(events: captured) }
        logger.logLevel = .info
        let writer = LoggerAccessLines(logger: logger)
        XCTAssertTrue(writer.isEnabled)
        writer.write(lines[0])
        let events = captured.events
        XCTAssertEqual(events.count, 1)
        XCTAssertEqual(events.first?.level, .info)
        XCTAssertEqual(events.first?.message.description, "request")
        XCTAssertEqual(events.first?.source, "SignupServer")
        XCTAssertEqual(events.first?.metadata?.mapValues(\.description), lines[0].metadata.mapValues(\.description))

        logger.logLevel = .notice  // --log-level notice, or --access-log off (critical)
        XCTAssertFalse(LoggerAccessLines(logger: logger).isEnabled, "no line is built above info")
    }
}

private final class CapturedEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [LogEvent] = []
    func append(_ event: LogEvent) { lock.withLock { stored.append(event) } }
    var events: [LogEvent] { lock.withLock { stored } }
}

private struct CapturingHandler: LogHandler {
    let events: CapturedEvents
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { events.append(event) }
}
