import Foundation
@testable import SignupServer
@testable import WebKernel
import XCTest

/// A limit is declared once (`LimitSetting`): its flag, help, default and the name its 429s
/// report. These tests hold the command line, the configuration reference, the operators'
/// metrics list and the metric to that declaration, so a limit added, renamed or re-defaulted
/// in one place and not the others fails here.
final class LimitSettingTests: XCTestCase {
    private static func document(_ path: String) -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)) ?? ""
    }

    /// Generated from the setting declarations: one row per setting,
    /// `| key | --flag | variable | kind | default | help |`.
    private static let configurationReference = LimitSettingTests.document("docs/CONFIGURATION.md")
    /// The metrics list (a public contract).
    private static let operations = LimitSettingTests.document("docs/OPERATIONS.md")

    func testEveryLimitIsAnOptionWithItsHelpAndDefault() throws {
        let help = try ServerProcess.run(["serve", "--help"]).output
            .replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
        for setting in LimitSetting.allCases {
            let option = try XCTUnwrap(help.range(of: "--\(setting.flag) <"), "--\(setting.flag) is an option")
            let entry = help[option.lowerBound...].prefix(600)
            XCTAssertTrue(entry.contains(setting.summary), "--\(setting.flag)'s help is its summary: \(entry)")
            XCTAssertTrue(entry.contains("(default: \(setting.defaultText))"), "--\(setting.flag)'s default: \(entry)")
        }
    }

    func testEveryLimitIsInTheConfigurationReferenceWithItsDefault() {
        XCTAssertFalse(Self.configurationReference.isEmpty, "docs/CONFIGURATION.md was found")
        let rows = Self.configurationReference.split(separator: "\n")
        for setting in LimitSetting.allCases {
            let row = rows.first { $0.contains("| `--\(setting.flag)` |") }
            XCTAssertNotNil(row, "docs/CONFIGURATION.md has a row for --\(setting.flag)")
            XCTAssertTrue(row?.contains("| `\(setting.defaultText)` |") ?? false,
                          "docs/CONFIGURATION.md's row for --\(setting.flag) has its default \(setting.defaultText): \(row ?? "")")
        }
    }

    func testEveryNameA429ReportsIsAMetricLabelInTheOperationsGuideAndBelongsToALimit() throws {
        let row = try XCTUnwrap(Self.operations.split(separator: "\n").first { $0.contains("`livesignup_rate_limited_total{limit}`") },
                                "docs/OPERATIONS.md's metrics list has the limit metric")
        for name in RateLimitName.allCases {
            XCTAssertTrue(row.contains("`\(name.rawValue)`"), "docs/OPERATIONS.md's metric row names \(name.rawValue)")
            XCTAssertTrue(LimitSetting.allCases.contains { $0.name == name }, "\(name.rawValue) is reported by a declared limit")
        }
        XCTAssertEqual(ServerMetrics.limits, RateLimitName.allCases, "the metric has one label per name")
    }

    func testABadValueForEveryLimitIsRefusedNamingItsFlag() throws {
        for setting in LimitSetting.allCases {
            let value: String
            switch setting.value {
            case .rate: value = "fast"
            case .count: value = "-1"
            }
            let (status, output, errors) = try ServerProcess.run(["--port", "0", "--\(setting.flag)", value])
            XCTAssertNotEqual(status, 0, "--\(setting.flag) \(value) is refused")
            XCTAssertTrue((output + errors).contains("--\(setting.flag)"), "the refusal names --\(setting.flag): \(output + errors)")
        }
    }

    func testTheValueSetIsTheOneTheLimitersUse() throws {
        var limits = SignupLimits()
        try LimitSetting.pagesPerAddress.set("5/min,burst=2", in: &limits)
        try LimitSetting.hashesPerAddress.set("3", in: &limits)
        XCTAssertEqual(LimitSetting.pagesPerAddress.text(in: limits), "5/min,burst=2")
        XCTAssertEqual(ClientLimiters(limits, now: Date.init).pages.rate, limits.pagesPerAddress)
        XCTAssertEqual(limits.hashesPerAddress, 3)
        XCTAssertThrowsError(try LimitSetting.hashesPerAddress.set("0", in: &limits)) {
            XCTAssertEqual("\($0)", "must be at least 1.")
        }
        XCTAssertNoThrow(try LimitSetting.hashQueueLength.set("0", in: &limits), "a queue may be empty")
    }
}
