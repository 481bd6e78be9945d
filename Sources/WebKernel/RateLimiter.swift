import Foundation

/// Token buckets by key (a client address, a session, an account): `take` spends from the
/// key's bucket or says how long until it could. The table is bounded: full buckets carry
/// no information and are dropped first, so a flood of new keys cannot grow it without end.
package final class RateLimiter: @unchecked Sendable {
    package enum Decision: Equatable {
        case allowed
        case limited(retryAfter: TimeInterval)
    }

    /// What its refusals are called (in 429s, logs and metrics).
    package let name: RateLimitName
    package let rate: Rate
    private let maximumKeys: Int
    private let now: @Sendable () -> Date
    /// Told each time a request asks this limit (`SignupApplication.Configuration.onLimitConsulted`).
    private let consulted: (@Sendable (RateLimitName) -> Void)?
    private let lock = NSLock()
    /// Guarded by `lock`, which is its exclusivity (no runtime check per access: see
    /// DEVELOPMENT.md, "exclusivity").
    @exclusivity(unchecked) private var buckets: [String: (tokens: Double, updated: Date)] = [:]

    package init(_ name: RateLimitName, rate: Rate, maximumKeys: Int = 100_000, now: @escaping @Sendable () -> Date,
         consulted: (@Sendable (RateLimitName) -> Void)? = nil) {
        self.name = name
        self.rate = rate
        self.maximumKeys = maximumKeys
        self.now = now
        self.consulted = consulted
    }

    /// Spends `cost` from `key`'s bucket if it holds that much.
    package func take(_ key: String, cost: Double = 1) -> Decision {
        consulted?(name)
        guard !rate.isUnlimited else { return .allowed }
        return withBucket(key) { tokens in
            guard tokens >= cost else { return .limited(retryAfter: (cost - tokens) / rate.perSecond) }
            tokens -= cost
            return .allowed
        }
    }

    /// Whether `take` would be allowed, without spending.
    package func check(_ key: String, cost: Double = 1) -> Decision {
        consulted?(name)
        guard !rate.isUnlimited else { return .allowed }
        return withBucket(key) { tokens in
            tokens >= cost ? .allowed : .limited(retryAfter: (cost - tokens) / rate.perSecond)
        }
    }

    /// Spends `cost` now, even from tokens not yet refilled, and returns how long to wait
    /// before acting on it; nil (nothing spent) when that wait would exceed `maximumWait`.
    /// For work that should be delayed rather than refused.
    package func reserve(_ key: String, cost: Double = 1, maximumWait: TimeInterval) -> TimeInterval? {
        consulted?(name)
        guard !rate.isUnlimited else { return 0 }
        return withBucket(key) { tokens in
            let wait = tokens >= cost ? 0 : (cost - tokens) / rate.perSecond
            guard wait <= maximumWait else { return nil }
            tokens -= cost
            return wait
        }
    }

    /// Gives back what a reservation spent (the work was not done after all).
    package func refund(_ key: String, cost: Double = 1) {
        guard !rate.isUnlimited else { return }
        withBucket(key) { tokens in tokens = min(rate.burst, tokens + cost) }
    }

    /// Forgets the key: its bucket is full again.
    package func reset(_ key: String) {
        lock.withLock { _ = buckets.removeValue(forKey: key) }
    }

    /// Keys currently tracked (for tests and metrics).
    package var trackedKeys: Int { lock.withLock { buckets.count } }

    /// Runs `body` under the lock with `key`'s tokens as refilled now, and keeps what it
    /// leaves: a full bucket is dropped (it carries no information), any other is stored.
    /// The key is hashed once for an existing bucket: every edit passes two limiters, and
    /// separate look-ups to read, test and write it hashed the client's address five times.
    private func withBucket<Result>(_ key: String, _ body: (inout Double) -> Result) -> Result {
        lock.withLock {
            let date = now()
            let index = buckets.index(forKey: key)
            var tokens = rate.burst
            if let index {
                let bucket = buckets.values[index]
                tokens = min(rate.burst, bucket.tokens + max(0, date.timeIntervalSince(bucket.updated)) * rate.perSecond)
            }
            let result = body(&tokens)
            if tokens >= rate.burst {
                if let index { buckets.remove(at: index) }
            } else if let index {
                buckets.values[index] = (tokens, date)
            } else {
                if buckets.count >= maximumKeys { prune() }
                buckets[key] = (tokens, date)
            }
            return result
        }
    }

    /// Drops the buckets that have refilled; if the table is still full, the half that were
    /// touched longest ago (their owners regain a little allowance; memory stays bounded).
    private func prune() {
        let date = now()
        buckets = buckets.filter { min(rate.burst, $0.value.tokens + date.timeIntervalSince($0.value.updated) * rate.perSecond) < rate.burst }
        if buckets.count >= maximumKeys {
            let keep = buckets.sorted { $0.value.updated > $1.value.updated }.prefix(maximumKeys / 2)
            buckets = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
        }
    }
}
