/// Every limit an operator sets, declared once: its flag, what it limits, where its value
/// lives in `SignupLimits` (and so its default), and the `RateLimitName` its 429s and the
/// `livesignup_rate_limited_total{limit}` metric report. The command line's options, their
/// help and environment variables, the limiters and docs/CONFIGURATION.md follow from this
/// list or are checked against it (`LimitSettingTests`).
///
/// Adding a limit: a case here, its value in `SignupLimits`, its limiter in
/// `ClientLimiters`, and its `@Option` in the executable's `LimitOptions` (ArgumentParser
/// declares options statically; a test fails until the option exists).
public enum LimitSetting: String, CaseIterable, Sendable {
    case pagesPerAddress = "pages-per-address"
    case sessionsPerAddress = "sessions-per-address"
    case liveSessionsPerAddress = "live-sessions-per-address"
    case editsPerSession = "edits-per-session"
    case editsPerAddress = "edits-per-address"
    case lookupsPerSession = "lookups-per-session"
    case lookupsPerAddress = "lookups-per-address"
    case signupsPerAddress = "signups-per-address"
    case signinFailuresPerAccount = "signin-failures-per-account"
    case signinFailuresPerAddress = "signin-failures-per-address"
    case secondFactorFailuresPerAccount = "second-factor-failures-per-account"
    case mailsPerRecipient = "mails-per-recipient"
    case mailsPerAddress = "mails-per-address"
    case recoveriesPerAccount = "recoveries-per-account"
    case recoveryCodesPerAccount = "recovery-codes-per-account"
    case noJavaScriptSignups = "no-javascript-signups"
    case noJavaScriptRecoveries = "no-javascript-recoveries"
    case passkeysPerAddress = "passkeys-per-address"
    case unknownSessionsPerAddress = "unknown-sessions-per-address"
    case hashesPerAddress = "hashes-per-address"
    case hashQueueLength = "hash-queue-length"
    case signInSessionsPerAccount = "signin-sessions-per-account"
    case tokenRequestsPerAddress = "token-requests-per-address"
    case tokenRequestsPerClient = "token-requests-per-client"

    /// Where the value lives: a rate (`COUNT/UNIT[,burst=N]`) or a count.
    public enum Value: Sendable {
        case rate(WritableKeyPath<SignupLimits, Rate> & Sendable)
        case count(WritableKeyPath<SignupLimits, Int> & Sendable)
    }

    /// The command-line flag without its dashes (also `LIVESIGNUP_<FLAG>`).
    public var flag: String { rawValue }

    public var value: Value {
        switch self {
        case .pagesPerAddress: return .rate(\.pagesPerAddress)
        case .sessionsPerAddress: return .rate(\.newSessionsPerAddress)
        case .liveSessionsPerAddress: return .count(\.liveSessionsPerAddress)
        case .editsPerSession: return .rate(\.editsPerSession)
        case .editsPerAddress: return .rate(\.editsPerAddress)
        case .lookupsPerSession: return .rate(\.lookupsPerSession)
        case .lookupsPerAddress: return .rate(\.lookupsPerAddress)
        case .signupsPerAddress: return .rate(\.signupsPerAddress)
        case .signinFailuresPerAccount: return .rate(\.signinFailuresPerAccount)
        case .signinFailuresPerAddress: return .rate(\.signinFailuresPerAddress)
        case .secondFactorFailuresPerAccount: return .rate(\.secondFactorFailuresPerAccount)
        case .mailsPerRecipient: return .rate(\.mailsPerRecipient)
        case .mailsPerAddress: return .rate(\.mailsPerAddress)
        case .recoveriesPerAccount: return .rate(\.recoveriesPerAccount)
        case .recoveryCodesPerAccount: return .rate(\.recoveryCodesPerAccount)
        case .noJavaScriptSignups: return .rate(\.noJavaScriptSignups)
        case .noJavaScriptRecoveries: return .rate(\.noJavaScriptRecoveries)
        case .passkeysPerAddress: return .rate(\.passkeysPerAddress)
        case .unknownSessionsPerAddress: return .rate(\.unknownSessionsPerAddress)
        case .hashesPerAddress: return .count(\.hashesPerAddress)
        case .hashQueueLength: return .count(\.hashQueueLength)
        case .signInSessionsPerAccount: return .count(\.signInSessionsPerAccount)
        case .tokenRequestsPerAddress: return .rate(\.tokenRequestsPerAddress)
        case .tokenRequestsPerClient: return .rate(\.tokenRequestsPerClient)
        }
    }

    /// What a request over it is told it ran into (429 `limit`, the metric's label); nil for
    /// `hash-queue-length`, which answers 503 (the server as a whole is busy), and for
    /// `signin-sessions-per-account`, which refuses nothing.
    package var name: RateLimitName? {
        switch self {
        case .pagesPerAddress: return .pages
        case .sessionsPerAddress, .liveSessionsPerAddress: return .sessions
        case .editsPerSession, .editsPerAddress: return .edits
        case .lookupsPerSession, .lookupsPerAddress: return .lookups
        case .signupsPerAddress: return .signups
        case .signinFailuresPerAccount, .signinFailuresPerAddress, .secondFactorFailuresPerAccount, .recoveryCodesPerAccount:
            return .signins
        case .mailsPerRecipient, .mailsPerAddress, .recoveriesPerAccount: return .mails
        case .noJavaScriptSignups, .noJavaScriptRecoveries: return .noJavaScript
        case .passkeysPerAddress: return .passkeys
        case .unknownSessionsPerAddress: return .unknownSessions
        case .hashesPerAddress: return .hashing
        case .hashQueueLength: return nil
        // Never refuses: a new sign-in ends the account's least recently used session.
        case .signInSessionsPerAccount: return nil
        case .tokenRequestsPerAddress, .tokenRequestsPerClient: return .tokens
        }
    }

    /// The option's help.
    public var summary: String {
        switch self {
        case .pagesPerAddress: return "Sign-up pages and fresh tokens per address."
        case .sessionsPerAddress: return "Form sessions started per address."
        case .liveSessionsPerAddress: return "Form sessions alive at once per address."
        case .editsPerSession: return "Field edits per form."
        case .editsPerAddress: return "Field edits per address."
        case .lookupsPerSession: return "Username look-ups per form (live answers beyond it wait)."
        case .lookupsPerAddress: return "Username look-ups per address."
        case .signupsPerAddress: return "Sign-up posts per address."
        case .signinFailuresPerAccount: return "Failed sign-ins per account before each try must wait."
        case .signinFailuresPerAddress: return "Failed sign-ins per address before each try must wait."
        case .secondFactorFailuresPerAccount: return "Wrong second-factor codes per account before each try must wait, across instances; a right password never refills it."
        case .mailsPerRecipient: return "Mails (codes, notices) to one email address, across instances: nobody can mail-bomb an address through the form."
        case .mailsPerAddress: return "Mails (codes, notices) asked for from one client address."
        case .recoveriesPerAccount: return "Recovery requests for one account (forgotten passwords), across instances; over it nothing is mailed and the page says the same, so it reveals no account. Requests from a network where the account is signed in have an allowance of their own, so strangers cannot spend the owner's."
        case .recoveryCodesPerAccount: return "Wrong recovery codes per account, across its recoveries and instances (a daily budget); over it every code reads as wrong, and the mailed link still works."
        case .noJavaScriptSignups: return "Sign-up posts without a proof of work (people without JavaScript), all clients together; over it the page asks for JavaScript or patience."
        case .noJavaScriptRecoveries: return "Recovery requests and codes posted without a proof of work, all clients together: their own budget, so a flood of them never turns away sign-ups without JavaScript."
        case .passkeysPerAddress: return "Passkey ceremonies (made on the form, signed in with, added) per address."
        case .unknownSessionsPerAddress: return "/auth answers for sign-in cookies that name no live session, per address (known sessions never count)."
        case .hashesPerAddress: return "Password hashes one address may have queued or running."
        case .hashQueueLength: return "Password hashes waiting per kind (sign-up, sign-in) before 503."
        case .signInSessionsPerAccount: return "Signed-in sessions one account keeps at once; a new sign-in ends the least recently used beyond it."
        case .tokenRequestsPerAddress: return "Requests to the OpenID provider's token, userinfo, revocation and introspection endpoints per address: an application's server asks for everyone it signs in."
        case .tokenRequestsPerClient: return "Tokens (codes redeemed, refreshes), revocations and introspections per application, across instances, counted once it has proved itself: a compromised or runaway application is bounded wherever it calls from."
        }
    }

    /// The value in `limits`, as the option takes it ("2/s,burst=60", "500").
    public func text(in limits: SignupLimits) -> String {
        switch value {
        case .rate(let path): return limits[keyPath: path].description
        case .count(let path): return String(limits[keyPath: path])
        }
    }

    /// The default, as the option takes it.
    public var defaultText: String { text(in: SignupLimits()) }

    /// The smallest count it takes (a queue may be empty; a per-address allowance may not).
    private var minimumCount: Int { self == .hashQueueLength ? 0 : 1 }

    /// Sets the value from the option's text; throws a readable reason.
    public func set(_ text: String, in limits: inout SignupLimits) throws {
        switch value {
        case .rate(let path):
            limits[keyPath: path] = try Rate(parsing: text)
        case .count(let path):
            guard let count = Int(text) else { throw LimitSettingError("must be a whole number, not '\(text)'.") }
            guard count >= 0 else { throw LimitSettingError("must not be negative.") }
            guard count >= minimumCount else { throw LimitSettingError("must be at least \(minimumCount).") }
            limits[keyPath: path] = count
        }
    }
}

public struct LimitSettingError: Error, CustomStringConvertible {
    public let description: String
    package init(_ description: String) { self.description = description }
}
