import Foundation

/// The rate limiters of one running app, one per limit in `SignupLimits`, each named by the
/// `limit` it reports (in 429 bodies and logs).
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
        pages = RateLimiter(rate: limits.pagesPerAddress, now: now)
        newSessions = RateLimiter(rate: limits.newSessionsPerAddress, now: now)
        editsPerSession = RateLimiter(rate: limits.editsPerSession, now: now)
        editsPerAddress = RateLimiter(rate: limits.editsPerAddress, now: now)
        lookupsPerSession = RateLimiter(rate: limits.lookupsPerSession, now: now)
        lookupsPerAddress = RateLimiter(rate: limits.lookupsPerAddress, now: now)
        signups = RateLimiter(rate: limits.signupsPerAddress, now: now)
        signinFailuresPerAccount = RateLimiter(rate: limits.signinFailuresPerAccount, now: now)
        signinFailuresPerAddress = RateLimiter(rate: limits.signinFailuresPerAddress, now: now)
    }
}

/// A request over one of the limits: which, and when to try again.
struct LimitExceeded: Error, Equatable {
    /// The limit's name: "pages", "sessions", "edits", "lookups", "signups", "signins",
    /// "hashing".
    let limit: String
    let retryAfter: TimeInterval

    /// Whole seconds for `Retry-After`, at least 1.
    var retryAfterSeconds: Int { max(1, Int(retryAfter.rounded(.up))) }
}

extension RateLimiter.Decision {
    /// Throws `LimitExceeded` named `limit` when limited.
    func orThrow(_ limit: String) throws(LimitExceeded) {
        if case .limited(let retryAfter) = self { throw LimitExceeded(limit: limit, retryAfter: retryAfter) }
    }
}
