import Dispatch
import Foundation

/// The one clock the app runs by: what "now" is (stored, compared, expired: sessions,
/// limits, codes, the outbox's schedule) and when delayed work runs (the heartbeat, sweeps,
/// a look-up waiting for its turn). Wall time, since what it says is stored and shared
/// between instances. Production runs by `SystemClock`; tests move a `TestClock` by hand.
public protocol WallClock: Sendable {
    /// The time now.
    var now: Date { get }
    /// Runs `work` once `seconds` have passed on this clock, on a thread of the clock's own.
    func after(_ seconds: TimeInterval, _ work: @escaping @Sendable () -> Void)
}

extension WallClock {
    /// Runs `work` every `seconds`, first `seconds` from now, for as long as it returns true.
    public func every(_ seconds: TimeInterval, _ work: @escaping @Sendable () -> Bool) {
        after(seconds) {
            if work() { every(seconds, work) }
        }
    }
}

/// The computer's clock; delayed work runs on Dispatch's global queue.
public struct SystemClock: WallClock {
    public init() {}

    public var now: Date { Date() }

    public func after(_ seconds: TimeInterval, _ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: work)
    }
}
