import Foundation

/// The rate limiters of one running app, one per limit in `SignupLimits`, each named once,
/// here, by the `RateLimitName` its 429s report.
final class ClientLimiters: Sendable {
    let pages: RateLimiter
    let newSessions: RateLimiter
    let editsPerSession: RateLimiter
    let editsPerAddress: RateLimiter
    let lookupsPerSession: RateLimiter
    let lookupsPerAddress: RateLimiter
    let signups: RateLimiter
    let signinFailuresPerAccount: RateLimiter
    let signinFailuresPerAddress: RateLimiter
    let limits: SignupLimits

    init(_ limits: SignupLimits, now: @escaping @Sendable () -> Date) {
        self.limits = limits
        pages = RateLimiter(.pages, rate: limits.pagesPerAddress, now: now)
        newSessions = RateLimiter(.sessions, rate: limits.newSessionsPerAddress, now: now)
        editsPerSession = RateLimiter(.edits, rate: limits.editsPerSession, now: now)
        editsPerAddress = RateLimiter(.edits, rate: limits.editsPerAddress, now: now)
        lookupsPerSession = RateLimiter(.lookups, rate: limits.lookupsPerSession, now: now)
        lookupsPerAddress = RateLimiter(.lookups, rate: limits.lookupsPerAddress, now: now)
        signups = RateLimiter(.signups, rate: limits.signupsPerAddress, now: now)
        signinFailuresPerAccount = RateLimiter(.signins, rate: limits.signinFailuresPerAccount, now: now)
        signinFailuresPerAddress = RateLimiter(.signins, rate: limits.signinFailuresPerAddress, now: now)
    }
}

/// A request over one of the limits: which, and when to try again.
struct LimitExceeded: Error, Equatable {
    let limit: RateLimitName
    let retryAfter: TimeInterval

    /// Whole seconds for `Retry-After`, at least 1.
    var retryAfterSeconds: Int { max(1, Int(retryAfter.rounded(.up))) }
}

extension RateLimiter {
    /// Spends from `key`'s bucket, or throws `LimitExceeded` with this limiter's name.
    func admit(_ key: String) throws(LimitExceeded) {
        if case .limited(let retryAfter) = take(key) { throw LimitExceeded(limit: name, retryAfter: retryAfter) }
    }

    /// Throws `LimitExceeded` if `key`'s bucket is empty, without spending.
    func ensureNotExhausted(_ key: String) throws(LimitExceeded) {
        if case .limited(let retryAfter) = check(key) { throw LimitExceeded(limit: name, retryAfter: retryAfter) }
    }
}
