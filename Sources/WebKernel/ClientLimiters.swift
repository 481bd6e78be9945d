import Foundation
import Logging
import SignupDomain

/// The rate limiters of one running app, one per rate in `LimitSetting`, which names each
/// by the `RateLimitName` its 429s report.
package final class ClientLimiters: Sendable {
    package let pages: RateLimiter
    package let newSessions: RateLimiter
    package let editsPerSession: RateLimiter
    package let editsPerAddress: RateLimiter
    package let lookupsPerSession: RateLimiter
    package let lookupsPerAddress: RateLimiter
    package let signups: RateLimiter
    /// Shared by every instance (rows in the account store): a guesser cannot multiply the
    /// allowance by the number of instances.
    package let signinFailuresPerAccount: SharedRateLimiter
    package let signinFailuresPerAddress: RateLimiter
    /// Shared by every instance: wrong second-factor codes per account, apart from the
    /// password's failures (a right password refills those, never this).
    package let secondFactorFailuresPerAccount: SharedRateLimiter
    /// Shared by every instance: the recipient's mailbox is one, however many instances.
    package let mailsPerRecipient: SharedRateLimiter
    package let mailsPerAddress: RateLimiter
    /// Shared by every instance: recovery requests for one account, wherever they come from.
    package let recoveriesPerAccount: SharedRateLimiter
    /// The same allowance again, for requests from a network where the account is signed in:
    /// strangers spending `recoveriesPerAccount` do not keep the owner from recovering.
    package let recoveriesFromKnownNetworks: SharedRateLimiter
    /// Shared by every instance: wrong recovery codes per account, across its recoveries.
    package let recoveryCodesPerAccount: SharedRateLimiter
    /// Keyed by one key for everybody (`ProofOfWorkGate.everybody`).
    package let noJavaScriptSignups: RateLimiter
    /// The same for recoveries (`/recover`, `/recover/code`), apart from sign-ups'.
    package let noJavaScriptRecoveries: RateLimiter
    package let passkeys: RateLimiter
    package let unknownSessions: RateLimiter
    package let tokens: RateLimiter
    /// Shared by every instance: one application's token requests, wherever it calls from.
    package let tokensPerClient: SharedRateLimiter
    package let limits: SignupLimits

    /// `store` holds the limits that must hold across instances; without one (tests of the
    /// other limits) they are kept in this process.
    /// - Parameter consulted: told the limit's name each time a request asks one of them.
    package init(_ limits: SignupLimits, store: (any SharedTokenBuckets)? = nil, logger: Logger = Logger(label: "livesignup"),
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
        tokens = limiter(.tokenRequestsPerAddress)
        tokensPerClient = SharedRateLimiter(
            .tokens, bucket: LimitSetting.tokenRequestsPerClient.flag, rate: limits.tokenRequestsPerClient,
            store: store ?? InMemoryTokenBuckets(), logger: logger, now: now, consulted: consulted)
    }
}

extension ClientLimiters {
    /// Pays for one password guess (a sign-in, a confirmation on `/account`) before it is
    /// hashed: from the address's and the account's failure allowances, both or neither.
    /// Guesses sent in parallel would all pass a look that came before any of them was
    /// charged (hundreds per refill instead of one).
    package func admitPasswordGuess(clientKey: String, accountKey: String) throws(LimitExceeded) {
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
    package func forgivePasswordGuess(clientKey: String, accountKey: String) {
        signinFailuresPerAccount.reset(accountKey)
        signinFailuresPerAddress.refund(clientKey)
    }

    /// Pays for one second-factor code before it is judged: from the address's failure
    /// allowance and the account's code allowance, both or neither. Never from the password's
    /// per-account allowance, which a right password refills.
    package func admitCodeGuess(clientKey: String, accountKey: String) throws(LimitExceeded) {
        try admitGuess(clientKey: clientKey, accountKey: accountKey, from: secondFactorFailuresPerAccount)
    }

    /// The code was right: the address gets its token back. The account's code allowance is
    /// not refilled: it refills with time alone, so the owner's own sign-ins never buy a
    /// guesser who knows the password more guesses between them (the in-a-row count does
    /// start again; the allowance bounds the rate).
    package func forgiveCodeGuess(clientKey: String) {
        signinFailuresPerAddress.refund(clientKey)
    }

    /// The per-address limiter a route row may have the router spend first (`Route.spentFirst`),
    /// by its name; nil for limits that are not one per-address rate.
    package func perAddress(_ name: RateLimitName) -> RateLimiter? {
        switch name {
        case .pages: pages
        case .passkeys: passkeys
        case .edits: editsPerAddress
        case .signups: signups
        case .tokens: tokens
        default: nil
        }
    }
}

/// A request over one of the limits: which, and when to try again.
package struct LimitExceeded: Error, Equatable {
    package let limit: RateLimitName
    package let retryAfter: TimeInterval
    /// Not over the limit, but its shared count could not be read: a limit that guards
    /// guesses fails closed (a readable 503), never letting a guess through unpaid.
    package var storeUnavailable = false

    /// Whole seconds for `Retry-After`, at least 1.
    package init(limit: RateLimitName, retryAfter: TimeInterval, storeUnavailable: Bool = false) {
        self.limit = limit
        self.retryAfter = retryAfter
        self.storeUnavailable = storeUnavailable
    }

    package var retryAfterSeconds: Int { max(1, Int(retryAfter.rounded(.up))) }
}

extension RateLimiter {
    /// Spends from `key`'s bucket, or throws `LimitExceeded` with this limiter's name.
    package func admit(_ key: String) throws(LimitExceeded) {
        if case .limited(let retryAfter) = take(key) { throw LimitExceeded(limit: name, retryAfter: retryAfter) }
    }

    /// Throws `LimitExceeded` if `key`'s bucket is empty, without spending.
    package func ensureNotExhausted(_ key: String) throws(LimitExceeded) {
        if case .limited(let retryAfter) = check(key) { throw LimitExceeded(limit: name, retryAfter: retryAfter) }
    }
}
