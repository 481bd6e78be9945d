import Foundation

/// A task executor with its own thread, for the async PostgreSQL client driven from
/// synchronous code.
///
/// `PostgresAccountStore` is called on Dispatch's worker threads and blocks them while it waits
/// for an answer. On Linux, Swift's global executor runs on those same width-limited Dispatch
/// pools, so with a few requests waiting at once no thread was left to run the tasks they were
/// waiting for, and every call timed out (seen as 503s under 16 concurrent sign-ups). Tasks
/// started with this executor as their preference (and their child tasks, such as the
/// pool's connection tasks) run here instead, whatever Dispatch's threads are doing. The
/// work on it is small (encoding, decoding, pool bookkeeping); the waiting is on NIO's loops.
final class DedicatedTaskExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var head = 0

    /// The one every store uses; its thread lives as long as the process.
    static let postgres = DedicatedTaskExecutor(name: "livesignup-postgres")

    private init(name: String) {
        let thread = Thread { self.runJobs() }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    /// Runs jobs in order, forever.
    private func runJobs() {
        let executor = asUnownedTaskExecutor()
        while true {
            let job = condition.withLock { () -> UnownedJob in
                while head == jobs.count {
                    jobs.removeAll(keepingCapacity: true)
                    head = 0
                    condition.wait()
                }
                defer { head += 1 }
                return jobs[head]
            }
            job.runSynchronously(on: executor)
        }
    }
}
