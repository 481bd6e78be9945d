import Foundation
import Logging
import SignupDomain

/// The rate limiters of one running app, one per rate in `LimitSetting`, which names each
/// by the `RateLimitName` its 429s report.
final class ClientLimiters: Sendable {
    let pages: RateLimiter
    let newSessions: RateLimiter
    let editsPerSession: RateLimiter
    let editsPerAddress: RateLimiter
    let lookupsPerSession: RateLimiter
    let lookupsPerAddress: RateLimiter
    let signups: RateLimiter
    /// Shared by every instance (rows in the account store): a guesser cannot multiply the
    /// allowance by the number of instances.
    let signinFailuresPerAccount: SharedRateLimiter
    let signinFailuresPerAddress: RateLimiter
    /// Shared by every instance: wrong second-factor codes per account, apart from the
    /// password's failures (a right password refills those, never this).
    let secondFactorFailuresPerAccount: SharedRateLimiter
    /// Shared by every instance: the recipient's mailbox is one, however many instances.
    let mailsPerRecipient: SharedRateLimiter
    let mailsPerAddress: RateLimiter
    /// Shared by every instance: recovery requests for one account, wherever they come from.
    let recoveriesPerAccount: SharedRateLimiter
    /// The same allowance again, for requests from a network where the account is signed in:
    /// strangers spending `recoveriesPerAccount` do not keep the owner from recovering.
    let recoveriesFromKnownNetworks: SharedRateLimiter
    /// Shared by every instance: wrong recovery codes per account, across its recoveries.
    let recoveryCodesPerAccount: SharedRateLimiter
    /// Keyed by one key for everybody (`ProofOfWorkGate.everybody`).
    let noJavaScriptSignups: RateLimiter
    /// The same for recoveries (`/recover`, `/recover/code`), apart from sign-ups'.
    let noJavaScriptRecoveries: RateLimiter
    let passkeys: RateLimiter
    let unknownSessions: RateLimiter
    let limits: SignupLimits

    /// `store` holds the limits that must hold across instances; without one (tests of the
    /// other limits) they are kept in this process.
    /// - Parameter consulted: told the limit's name each time a request asks one of them.
    init(_ limits: SignupLimits, store: (any SharedTokenBuckets)? = nil, logger: Logger = Logger(label: "livesignup"),
         now: @escaping @Sendable () -> Date, consulted: (@Sendable (RateLimitName) -> Void)? = nil) {
        self.limits = limits
        func limiter(_ setting: LimitSetting) -> RateLimiter {
            guard case .rate(let path) = setting.value, let name = setting.name else {
                preconditionFailure("\(setting) is not a rate with a name")
            }
            return RateLimiter(name, rate: limits[keyPath: path], now: now, consulted: consulted)
        }
        pages = limiter(.pagesPerAddress)
        newSessions = limiter(.sessionsPerAddress)
        editsPerSession = limiter(.editsPerSession)
        editsPerAddress = limiter(.editsPerAddress)
        lookupsPerSession = limiter(.lookupsPerSession)
        lookupsPerAddress = limiter(.lookupsPerAddress)
        signups = limiter(.signupsPerAddress)
        signinFailuresPerAccount = SharedRateLimiter(
            .signins, bucket: LimitSetting.signinFailuresPerAccount.flag, rate: limits.signinFailuresPerAccount,
            store: store ?? InMemoryTokenBuckets(), logger: logger, now: now, failsClosed: true, consulted: consulted)
        signinFailuresPerAddress = limiter(.signinFailuresPerAddress)
        secondFactorFailuresPerAccount = SharedRateLimiter(
            .signins, bucket: LimitSetting.secondFactorFailuresPerAccount.flag, rate: limits.secondFactorFailuresPerAccount,
            store: store ?? InMemoryTokenBuckets(), logger: logger, now: now, failsClosed: true, consulted: consulted)
        mailsPerRecipient = SharedRateLimiter(
            .mails, bucket: LimitSetting.mailsPerRecipient.flag, rate: limits.mailsPerRecipient,
            store: store ?? InMemoryTokenBuckets(), logger: logger, now: now, consulted: consulted)
        mailsPerAddress = limiter(.mailsPerAddress)
        recoveriesPerAccount = SharedRateLimiter(
            .mails, bucket: LimitSetting.recoveriesPerAccount.flag, rate: limits.recoveriesPerAccount,
            store: store ?? InMemoryTokenBuckets(), logger: logger, now: now, consulted: consulted)
        recoveriesFromKnownNetworks = SharedRateLimiter(
            .mails, bucket: LimitSetting.recoveriesPerAccount.flag + "-known-network", rate: limits.recoveriesPerAccount,
            store: store ?? InMemoryTokenBuckets(), logger: logger, now: now, consulted: consulted)
        recoveryCodesPerAccount = SharedRateLimiter(
            .signins, bucket: LimitSetting.recoveryCodesPerAccount.flag, rate: limits.recoveryCodesPerAccount,
            store: store ?? InMemoryTokenBuckets(), logger: logger, now: now, failsClosed: true, consulted: consulted)
        noJavaScriptSignups = limiter(.noJavaScriptSignups)
        noJavaScriptRecoveries = limiter(.noJavaScriptRecoveries)
        passkeys = limiter(.passkeysPerAddress)
        unknownSessions = limiter(.unknownSessionsPerAddress)
    }
}

extension ClientLimiters {
    /// Pays for one password guess (a sign-in, a confirmation on `/account`) before it is
    /// hashed: from the address's and the account's failure allowances, both or neither.
    /// Guesses sent in parallel would all pass a look that came before any of them was
    /// charged (hundreds per refill instead of one).
    func admitPasswordGuess(clientKey: String, accountKey: String) throws(LimitExceeded) {
        try admitGuess(clientKey: clientKey, accountKey: accountKey, from: signinFailuresPerAccount)
    }

    /// The address's failure allowance and one of the account's, both or neither.
    private func admitGuess(clientKey: String, accountKey: String, from perAccount: SharedRateLimiter) throws(LimitExceeded) {
        try signinFailuresPerAddress.admit(clientKey)
        do throws(LimitExceeded) {
            try perAccount.admit(accountKey)
        } catch {
            signinFailuresPerAddress.refund(clientKey)
            throw error
        }
    }

    /// The guess was right: the address gets its token back and the account's failures are forgiven.
    func forgivePasswordGuess(clientKey: String, accountKey: String) {
        signinFailuresPerAccount.reset(accountKey)
        signinFailuresPerAddress.refund(clientKey)
    }

    /// Pays for one second-factor code before it is judged: from the address's failure
    /// allowance and the account's code allowance, both or neither. Never from the password's
    /// per-account allowance, which a right password refills.
    func admitCodeGuess(clientKey: String, accountKey: String) throws(LimitExceeded) {
        try admitGuess(clientKey: clientKey, accountKey: accountKey, from: secondFactorFailuresPerAccount)
    }

    /// The code was right: the address gets its token back. The account's code allowance is
    /// not refilled: it refills with time alone, so the owner's own sign-ins never buy a
    /// guesser who knows the password more guesses between them (the in-a-row count does
    /// start again; the allowance bounds the rate).
    func forgiveCodeGuess(clientKey: String) {
        signinFailuresPerAddress.refund(clientKey)
    }

    /// The per-address limiter a route row may have the router spend first (`Route.spentFirst`),
    /// by its name; nil for limits that are not one per-address rate.
    func perAddress(_ name: RateLimitName) -> RateLimiter? {
        switch name {
        case .pages: pages
        case .passkeys: passkeys
        case .edits: editsPerAddress
        case .signups: signups
        default: nil
        }
    }
}

/// A request over one of the limits: which, and when to try again.
struct LimitExceeded: Error, Equatable {
    let limit: RateLimitName
    let retryAfter: TimeInterval
    /// Not over the limit, but its shared count could not be read: a limit that guards
    /// guesses fails closed (a readable 503), never letting a guess through unpaid.
    var storeUnavailable = false

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
