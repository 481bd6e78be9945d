import Foundation
import XCTest

/// A bounded wait until something holds, for what tests cannot be told about directly (a
/// count inside the server, a process's state). XCTest evaluates the predicate as it waits;
/// the test never sleeps for a fixed time.
public enum Condition {
    @discardableResult
    @available(*, noasync, message: "an async test awaits the async wait, which needs no run loop")
    public static func wait(timeout: TimeInterval, until condition: @escaping () -> Bool) -> Bool {
        // The predicate is evaluated on this thread's run loop while it waits.
        nonisolated(unsafe) let condition = condition
        return XCTWaiter().wait(for: [expectation { condition() }], timeout: timeout) == .completed
    }

    /// For async tests: the condition is checked every 5 ms until it holds or the bound
    /// passes. Not XCTest's `fulfillment(of:)`, which on Linux blocks a detached thread in a
    /// Foundation run loop per wait; a CI run crashed inside that machinery (libdispatch,
    /// under XCTest and Foundation), and a task that checks and sleeps needs none of it.
    @discardableResult
    public static func wait(timeout: TimeInterval, until condition: @escaping @Sendable () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while true {
            if condition() { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    private static func expectation(_ condition: @escaping @Sendable () -> Bool) -> XCTestExpectation {
        XCTNSPredicateExpectation(predicate: NSPredicate { _, _ in condition() }, object: nil)
    }
}

/// Something another thread reports (a callback ran, a job started), counted, for an async
/// test to await with a bound instead of an `XCTestExpectation` (see `Condition.wait`).
public final class Occurrences: @unchecked Sendable {
    private let lock = NSLock()
    private var happened = 0

    public init() {}

    /// Called by the thread that saw it happen.
    public func record() { lock.withLock { happened += 1 } }

    public var count: Int { lock.withLock { happened } }

    /// Whether it happened at least `times` times within `timeout` seconds.
    public func wait(for times: Int = 1, timeout: TimeInterval) async -> Bool {
        await Condition.wait(timeout: timeout) { self.count >= times }
    }
}

/// Facts about this test process.
public enum ProcessStatus {
    /// Descriptors the process has open now (`/proc/self/fd`).
    public static func descriptorCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }

    /// Threads the process has now (`/proc/self/status`).
    public static func threadCount() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
        return line.flatMap { Int($0.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
    }
}
