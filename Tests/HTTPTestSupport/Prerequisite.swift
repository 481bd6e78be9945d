import Foundation
import XCTest

/// A program a test needs from the machine rather than from this package: nginx, PostgreSQL's
/// server, openssl, systemd-analyze. Where one is missing the test is skipped and the log says
/// what is missing and where it comes from, except in a run that must prove everything: under
/// CI (`CI=true`) or `LIVESIGNUP_REQUIRE_ALL=1` (which `make test` sets, having installed them)
/// a missing program fails the test instead, so a run is never green for tests that did not run.
public enum Prerequisite {
    /// Whether this run must have every prerequisite.
    public static var everythingRequired: Bool {
        let environment = ProcessInfo.processInfo.environment
        return ["1", "true", "yes"].contains(environment["CI"]?.lowercased() ?? "")
            || environment["LIVESIGNUP_REQUIRE_ALL"] == "1"
    }

    /// What to throw when `what` is missing: a skip that says so, or (where everything is
    /// required) an error that fails the test with the same words.
    public static func missing(_ what: String, file: StaticString = #filePath, line: UInt = #line) -> any Error {
        everythingRequired ? Missing(what: what) : XCTSkip("skipped: \(what)", file: file, line: line)
    }

    /// Throws `missing` unless python3 can import `module` (make test installs it from PyPI with
    /// the browser tests' packages).
    public static func python(module: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import \(module)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let imported = (try? process.run()).map { process.waitUntilExit(); return process.terminationStatus == 0 } ?? false
        if !imported {
            throw missing("python3 cannot import \(module) (make test installs it: pip install \(module))", file: file, line: line)
        }
    }

    public struct Missing: Error, CustomStringConvertible {
        public let what: String
        public var description: String {
            "\(what); this run requires it (CI or LIVESIGNUP_REQUIRE_ALL=1), so the test fails instead of skipping"
        }
    }
}
