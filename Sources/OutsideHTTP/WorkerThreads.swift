import Foundation

/// A fixed set of threads for work that blocks on the outside world (a look-up that may wait
/// out its whole timeout), kept off Dispatch's shared pool.
///
/// Dispatch on Linux runs about one thread per core for queued work and adds more only
/// slowly when they block: eight look-ups stalled on a trickling source once held back every
/// other person's debounced checks for a second (issue 25). These threads block instead, and
/// nobody else waits behind them. At most `queueLimit` jobs wait for a thread; more are
/// refused, so a source that stalls cannot grow the queue without bound. A thread with
/// nothing to do for `idleSeconds` ends; the next burst starts threads again.
public final class WorkerThreads: @unchecked Sendable {
    private let count: Int
    private let name: String
    private let queueLimit: Int
    private let idleSeconds: TimeInterval
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var started = 0
    private var idle = 0

    public init(count: Int, name: String, queueLimit: Int = 1024, idleSeconds: TimeInterval = 5) {
        self.count = max(1, count)
        self.name = name
        self.queueLimit = queueLimit
        self.idleSeconds = idleSeconds
    }

    /// Runs `work` on one of the threads (started on first need, then kept). Returns false,
    /// running nothing, when `queueLimit` jobs are already waiting.
    @discardableResult
    public func submit(_ work: @escaping @Sendable () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard jobs.count < queueLimit else { return false }
        jobs.append(work)
        if idle > 0 {
            condition.signal()
        } else if started < count {
            started += 1
            let thread = Thread { [self] in run() }
            thread.name = name
            thread.start()
        }
        return true
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty {
                idle += 1
                let woken = condition.wait(until: Date(timeIntervalSinceNow: idleSeconds))
                idle -= 1
                if !woken && jobs.isEmpty {
                    started -= 1
                    condition.unlock()
                    return
                }
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
        }
    }
}
