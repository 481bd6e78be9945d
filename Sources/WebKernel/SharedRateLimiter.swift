import Foundation
import Logging
import SignupDomain

/// A rate limit that holds across every instance sharing the account store: its token
/// buckets are rows there (`AccountStore.spendSharedTokens`). For limits an attacker would
/// otherwise multiply by the number of instances behind the proxy: failed sign-ins per
/// account. Costs a store round trip per check, so only for rare events.
///
/// A store that cannot answer lets the request through (logged) unless the limit `failsClosed`:
/// limits on guesses (passwords, codes) then refuse with `LimitExceeded.storeUnavailable`,
/// because a guess judged without its budget is a free guess (a sign-in's account look-up may
/// come from a cache or a replica that still answers).
package final class SharedRateLimiter: Sendable {
    package let name: RateLimitName
    package let rate: Rate
    package let failsClosed: Bool
    private let bucket: String
    private let store: any SharedTokenBuckets
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let consulted: (@Sendable (RateLimitName) -> Void)?

    package init(_ name: RateLimitName, bucket: String, rate: Rate, store: any SharedTokenBuckets, logger: Logger,
         now: @escaping @Sendable () -> Date, failsClosed: Bool = false, consulted: (@Sendable (RateLimitName) -> Void)? = nil) {
        self.consulted = consulted
        self.failsClosed = failsClosed
        self.name = name
        self.bucket = bucket
        self.rate = rate
        self.store = store
        self.logger = logger
        self.now = now
    }

    private var bucketRate: SharedBucketRate { SharedBucketRate(perSecond: rate.perSecond, burst: rate.burst) }

    /// Throws `LimitExceeded` if `key`'s bucket is empty, without spending.
    package func ensureNotExhausted(_ key: String) throws(LimitExceeded) {
        try spend(0, from: key)
    }

    /// Spends one token, or throws `LimitExceeded` when there is none (a mail about to be sent).
    package func admit(_ key: String) throws(LimitExceeded) {
        try spend(1, from: key)
    }

    /// Spends `cost` (0 only looks) or throws when less than one token is there. A store that
    /// cannot answer lets the request through, logged.
    private func spend(_ cost: Double, from key: String) throws(LimitExceeded) {
        consulted?(name)
        guard !rate.isUnlimited else { return }
        let tokens: Double
        do {
            tokens = try store.spendSharedTokens(bucket: bucket, key: key, cost: cost, rate: bucketRate, at: now())
        } catch {
            if failsClosed {
                logger.warning("Shared limit unavailable; refused", metadata: ["limit": "\(name)", "error": "\(error)"])
                throw LimitExceeded(limit: name, retryAfter: 5, storeUnavailable: true)
            }
            logger.warning("Shared limit unavailable; not applied", metadata: ["limit": "\(name)", "error": "\(error)"])
            return
        }
        if tokens < 1 { throw LimitExceeded(limit: name, retryAfter: (1 - tokens) / rate.perSecond) }
    }

    /// Fills `key`'s bucket again (a successful sign-in).
    package func reset(_ key: String) {
        guard !rate.isUnlimited else { return }
        do {
            try store.resetSharedTokens(bucket: bucket, key: key)
        } catch {
            logger.warning("Shared limit unavailable; not reset", metadata: ["limit": "\(name)", "error": "\(error)"])
        }
    }
}
