import Foundation

/// A clock tests move by hand, as Point-Free's test clocks and schedulers do: `now` stands
/// still until `advance(by:)`, and work given to `after` runs when the clock reaches its time
/// (in time order, on the thread that advances). Given to the app
/// (`SignupApplication.Configuration.clock`) or to one part (a limiter, a cache), it drives
/// expiry, refills, sweeps and heartbeats without waiting.
public final class TestClock: WallClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    private var scheduled: [(due: Date, order: Int, work: @Sendable () -> Void)] = []
    private var nextOrder = 0

    public init(start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = start
    }

    public var now: Date { lock.withLock { current } }

    /// Work waiting for the clock to reach its time.
    public var waiting: Int { lock.withLock { scheduled.count } }

    /// When each piece of waiting work is due, so a test can see that something was put off
    /// (and by how long) before it moves the clock.
    public var dueTimes: [Date] { lock.withLock { scheduled.map(\.due) } }

    /// Runs `work` once the clock has been advanced `seconds` from now.
    public func after(_ seconds: TimeInterval, _ work: @escaping @Sendable () -> Void) {
        lock.withLock {
            scheduled.append((current + max(0, seconds), nextOrder, work))
            nextOrder += 1
        }
    }

    /// Moves the clock on and runs every piece of work that has come due, in time order.
    public func advance(by seconds: TimeInterval) {
        let target = lock.withLock { current + seconds }
        while true {
            let next = lock.withLock { () -> (@Sendable () -> Void)? in
                guard let index = scheduled.indices.filter({ scheduled[$0].due <= target })
                    .min(by: { (scheduled[$0].due, scheduled[$0].order) < (scheduled[$1].due, scheduled[$1].order) })
                else { return nil }
                let item = scheduled.remove(at: index)
                current = max(current, item.due)
                return item.work
            }
            guard let next else { break }
            next()
        }
        lock.withLock { current = target }
    }
}
