import Foundation
import XCTest

/// A bounded wait until something holds, for what tests cannot be told about directly (a
/// count inside the server, a process's state). XCTest evaluates the predicate as it waits;
/// the test never sleeps for a fixed time.
public enum Condition {
    @discardableResult
    public static func wait(timeout: TimeInterval, until condition: @escaping () -> Bool) -> Bool {
        // The predicate is evaluated on this thread's run loop while it waits.
        nonisolated(unsafe) let condition = condition
        return XCTWaiter().wait(for: [expectation { condition() }], timeout: timeout) == .completed
    }

    /// For async tests. XCTest's predicate expectations are polled by the waiting thread's run
    /// loop, which an async test does not run; here a timer on a private queue checks the
    /// condition (every 10 ms) and fulfils the expectation the test awaits.
    @discardableResult
    public static func wait(timeout: TimeInterval, until condition: @escaping @Sendable () -> Bool) async -> Bool {
        let holds = XCTestExpectation(description: "condition holds")
        let checker = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "condition-checker"))
        checker.schedule(deadline: .now(), repeating: .milliseconds(10))
        checker.setEventHandler {
            if condition() {
                checker.cancel()
                holds.fulfill()
            }
        }
        checker.resume()
        let result = await XCTWaiter().fulfillment(of: [holds], timeout: timeout)
        checker.cancel()
        return result == .completed
    }

    private static func expectation(_ condition: @escaping @Sendable () -> Bool) -> XCTestExpectation {
        XCTNSPredicateExpectation(predicate: NSPredicate { _, _ in condition() }, object: nil)
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
