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

    /// For async tests: the test is suspended until the condition holds or the bound passes,
    /// whichever comes first. A timer on a private queue checks it every 5 ms and resumes the
    /// test then; nothing sleeps. Not XCTest's `fulfillment(of:)`, which on Linux blocks a
    /// detached thread in a Foundation run loop per wait: a CI run crashed inside that
    /// machinery (libdispatch, under XCTest and Foundation).
    @discardableResult
    public static func wait(timeout: TimeInterval, until condition: @escaping @Sendable () -> Bool) async -> Bool {
        if condition() { return true }
        let deadline = DispatchTime.now() + timeout
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let checker = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "condition-checker"))
            // Touched only by the timer's handler, on its serial queue.
            let finished = Flag()
            checker.schedule(deadline: .now() + .milliseconds(5), repeating: .milliseconds(5))
            checker.setEventHandler {
                guard !finished.isSet else { return }
                let holds = condition()
                guard holds || DispatchTime.now() >= deadline else { return }
                finished.isSet = true
                checker.cancel()
                continuation.resume(returning: holds)
            }
            checker.resume()
        }
    }

    private final class Flag: @unchecked Sendable {
        var isSet = false
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
