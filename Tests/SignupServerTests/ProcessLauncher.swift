import Foundation

/// Starts child processes from one long-lived thread.
///
/// `Process.run()` makes a run loop for the calling thread and leaves a source in it. From
/// an async test that thread is any thread of the cooperative pool, so run loops were made
/// on many short-lived pool threads. Foundation crashed once making one ("Illegal
/// instruction" in `__CFRunLoopCopyMode`; see docs/DEVELOPMENT.md). Here a single thread
/// makes its run loop once and launches everything.
final class ProcessLauncher: @unchecked Sendable {
    static let shared = ProcessLauncher()

    private let condition = NSCondition()
    private var jobs: [() -> Void] = []

    private init() {
        let thread = Thread { [unowned self] in
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job()
            }
        }
        thread.name = "process-launcher"
        thread.start()
    }

    /// `process.run()` on the launcher thread; returns once it has started (or thrown).
    func run(_ process: Process) throws {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var failure: (any Error)?
        nonisolated(unsafe) let process = process
        condition.lock()
        jobs.append {
            do { try process.run() } catch { failure = error }
            done.signal()
        }
        condition.signal()
        condition.unlock()
        done.wait()
        if let failure { throw failure }
    }
}
