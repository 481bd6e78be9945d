import ArgumentParser
import Foundation
import Logging
import SignupDomain
import SignupServer

/// `signup-server funnel --since 24h`: the sign-up funnel from the store, every instance's
/// counts summed, for operators without Grafana (issue 59).
struct Funnel: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the sign-up funnel (counts only, every instance summed) from the account store.")

    @Option(help: help("database", "SQLite database file or PostgreSQL URL."))
    var database = "data/livesignup.sqlite"

    @Option(help: "How far back: a number and a unit, s, m, h or d (\"90m\", \"24h\", \"7d\"); the store keeps 90 days.")
    var since = "24h"

    @Option(help: "table (for people) or json (one object, for programs).")
    var format: ReportFormat = .table

    func validate() throws {
        guard Self.seconds(since) != nil else {
            throw ValidationError("--since takes a number and a unit (s, m, h or d), such as 24h or 7d, not '\(since)'.")
        }
    }

    /// "24h" → 86400; nil for anything else (no unit, a negative or absurd number).
    static func seconds(_ text: String) -> TimeInterval? {
        let units: [Character: TimeInterval] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        guard let unit = text.last.flatMap({ units[$0] }), let number = Int(text.dropLast()), number > 0,
              number <= 100 * 365 * 86_400 / Int(unit) else { return nil }
        return TimeInterval(number) * unit
    }

    func run() throws {
        let store = try AccountOptions.openExistingStore(database, logger: Logger(label: "livesignup.funnel"))
        let since = Date().addingTimeInterval(-Self.seconds(self.since)!)
        // Counts are kept by the minute: the minute `since` falls in is read whole.
        let minute = FunnelSeries.period(of: since)
        let report = FunnelReport(try store.funnelCounts(since: minute), since: minute)
        print(format == .json ? report.json : report.text, terminator: format == .json ? "\n" : "")
    }
}
