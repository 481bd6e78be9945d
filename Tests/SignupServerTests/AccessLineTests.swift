import WebKernel
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

    /// How StreamLogHandler (swift-log's text format) writes metadata: ` key=value` for each
    /// key, sorted by key.
    private func swiftLogFields(_ metadata: Logger.Metadata) -> String {
        metadata.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
    }

    func testTheDirectFieldsAreSwiftLogsTextForTheSameMetadata() {
        for line in lines {
            var bytes: [UInt8] = []
            line.appendFields(to: &bytes)
            XCTAssertEqual(String(decoding: bytes, as: UTF8.self), swiftLogFields(line.metadata))
        }
        XCTAssertEqual(Set(lines[0].metadata.keys), ["method", "route", "status", "duration_ms", "client", "token"])
        XCTAssertNil(lines[1].metadata["token"], "no token key without a token")
    }

    func testTheLoggerPathSendsAnInfoEventWithTheLinesMetadata() {
        let captured = CapturedLog()
        var logger = Logger(label: "livesignup.access") { _ in CapturingLogHandler(lines: captured) }
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
