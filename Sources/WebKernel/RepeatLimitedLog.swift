import Foundation
import Logging
import MicroHTTPD
import Locking

/// Logs a line that can repeat from one cause at most once per `interval` for each cause;
/// the repeats in between are counted and reported (`repeated`) with the next line that is
/// let through. A failing dependency or a kernel out of descriptors would otherwise write
/// the same error thousands of times a second into an operator's alerting.
package final class RepeatLimitedLog: Sendable {
    private struct Cause {
        package var lastLogged: Date
        package var suppressed: Int
    }

    /// Causes remembered at most; past it the oldest are forgotten (their next line logs).
    package static let causeCapacity = 256

    private let logger: Logger
    private let interval: TimeInterval
    private let now: @Sendable () -> Date
    private let causes = Locked<[String: Cause]>([:])

    package init(logger: Logger, interval: TimeInterval = 60, now: @escaping @Sendable () -> Date) {
        self.logger = logger
        self.interval = interval
        self.now = now
    }

    /// Logs `message` at `level` unless a line of the same `cause` was logged within the
    /// interval, in which case it is only counted.
    package func log(_ level: Logger.Level, _ message: @autoclosure () -> Logger.Message, cause: String,
             metadata: Logger.Metadata = [:]) {
        let time = now()
        let repeats = causes.withLock { causes -> Int? in
            if var known = causes[cause] {
                guard time.timeIntervalSince(known.lastLogged) >= interval else {
                    known.suppressed += 1
                    causes[cause] = known
                    return nil
                }
                causes[cause] = Cause(lastLogged: time, suppressed: 0)
                return known.suppressed
            }
            if causes.count >= Self.causeCapacity,
               let oldest = causes.min(by: { $0.value.lastLogged < $1.value.lastLogged })?.key {
                causes[oldest] = nil
            }
            causes[cause] = Cause(lastLogged: time, suppressed: 0)
            return 0
        }
        guard let repeats else { return }
        var metadata = metadata
        if repeats > 0 { metadata["repeated"] = "\(repeats)" }
        logger.log(level: level, message(), metadata: metadata)
    }
}
