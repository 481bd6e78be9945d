import Foundation

/// Token buckets by key (a client address, a session, an account): `take` spends from the
/// key's bucket or says how long until it could. The table is bounded: full buckets carry
/// no information and are dropped first, so a flood of new keys cannot grow it without end.
final class RateLimiter: @unchecked Sendable {
    enum Decision: Equatable {
        case allowed
        case limited(retryAfter: TimeInterval)
    }

    /// What its refusals are called (in 429s, logs and metrics).
    let name: RateLimitName
    let rate: Rate
    private let maximumKeys: Int
    private let now: @Sendable () -> Date
    private let lock = NSLock()
    private var buckets: [String: (tokens: Double, updated: Date)] = [:]

    init(_ name: RateLimitName, rate: Rate, maximumKeys: Int = 100_000, now: @escaping @Sendable () -> Date) {
        self.name = name
        self.rate = rate
        self.maximumKeys = maximumKeys
        self.now = now
    }

    /// Spends `cost` from `key`'s bucket if it holds that much.
    func take(_ key: String, cost: Double = 1) -> Decision {
        guard !rate.isUnlimited else { return .allowed }
        return lock.withLock {
            var tokens = refilled(key)
            defer { store(key, tokens) }
            guard tokens >= cost else { return .limited(retryAfter: (cost - tokens) / rate.perSecond) }
            tokens -= cost
            return .allowed
        }
    }

    /// Whether `take` would be allowed, without spending.
    func check(_ key: String, cost: Double = 1) -> Decision {
        guard !rate.isUnlimited else { return .allowed }
        return lock.withLock {
            let tokens = refilled(key)
            return tokens >= cost ? .allowed : .limited(retryAfter: (cost - tokens) / rate.perSecond)
        }
    }

    /// Spends `cost` now, even from tokens not yet refilled, and returns how long to wait
    /// before acting on it; nil (nothing spent) when that wait would exceed `maximumWait`.
    /// For work that should be delayed rather than refused.
    func reserve(_ key: String, cost: Double = 1, maximumWait: TimeInterval) -> TimeInterval? {
        guard !rate.isUnlimited else { return 0 }
        return lock.withLock {
            let tokens = refilled(key)
            let wait = tokens >= cost ? 0 : (cost - tokens) / rate.perSecond
            guard wait <= maximumWait else {
                store(key, tokens)
                return nil
            }
            store(key, tokens - cost)
            return wait
        }
    }

    /// Gives back what a reservation spent (the work was not done after all).
    func refund(_ key: String, cost: Double = 1) {
        guard !rate.isUnlimited else { return }
        lock.withLock { store(key, min(rate.burst, refilled(key) + cost)) }
    }

    /// Forgets the key: its bucket is full again.
    func reset(_ key: String) {
        lock.withLock { _ = buckets.removeValue(forKey: key) }
    }

    /// Keys currently tracked (for tests and metrics).
    var trackedKeys: Int { lock.withLock { buckets.count } }

    // Called with `lock` held.
    private func refilled(_ key: String) -> Double {
        guard let bucket = buckets[key] else { return rate.burst }
        let elapsed = max(0, now().timeIntervalSince(bucket.updated))
        return min(rate.burst, bucket.tokens + elapsed * rate.perSecond)
    }

    // Called with `lock` held.
    private func store(_ key: String, _ tokens: Double) {
        if tokens >= rate.burst {
            buckets[key] = nil
            return
        }
        if buckets[key] == nil, buckets.count >= maximumKeys { prune() }
        buckets[key] = (tokens, now())
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
