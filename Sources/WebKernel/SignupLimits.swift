import Foundation

/// What one client (an address; an IPv6 /64) or one form may do, so nobody can lock anybody
/// out. Defaults are generous enough for many people behind one NAT; every one is a flag.
public struct SignupLimits: Sendable {
    /// Sign-up pages and fresh tokens (`GET /`, `POST /sessions`) per address.
    public var pagesPerAddress = Rate.per(second: 2, burst: 60)
    /// Form sessions built (a token's first stream or edit) per address.
    public var newSessionsPerAddress = Rate.per(second: 1, burst: 60)
    /// Form sessions alive at once per address.
    public var liveSessionsPerAddress = 500
    /// Field edits per form (a fast typist sends about 10 a second).
    public var editsPerSession = Rate.per(second: 20, burst: 60)
    /// Field edits per address, all its forms together.
    public var editsPerAddress = Rate.per(second: 200, burst: 600)
    /// "Is this username free?" answers per form, live or on submit. Over it, live answers
    /// wait (the checklist shows "checking") instead of being refused.
    public var lookupsPerSession = Rate.per(second: 0.5, burst: 15)
    /// The same per address.
    public var lookupsPerAddress = Rate.per(second: 2, burst: 60)
    /// `POST /signup` per address.
    public var signupsPerAddress = Rate.per(minute: 6, burst: 10)
    /// Failed sign-ins per account before each further try must wait.
    public var signinFailuresPerAccount = Rate.per(minute: 1, burst: 5)
    /// Failed sign-ins per address before each further try must wait.
    public var signinFailuresPerAddress = Rate.per(minute: 6, burst: 20)
    /// Wrong second-factor codes per account before each further try must wait: a budget of
    /// their own, which no right password refills (issue 52), so knowing the password buys
    /// no more guesses at the code.
    public var secondFactorFailuresPerAccount = Rate.per(minute: 1, burst: 5)
    /// Passkey ceremonies (`/passkeys/register`, `/passkeys/signin`, `/account/passkeys`) per
    /// address: each decodes CBOR and checks a signature for a client nobody knows yet.
    public var passkeysPerAddress = Rate.per(second: 1, burst: 30)
    /// The OpenID provider's token, userinfo, revocation and introspection endpoints per
    /// address (issue 56): one application server asks for every person it signs in, so the
    /// allowance is a busy server's, not a browser's.
    public var tokenRequestsPerAddress = Rate.per(second: 20, burst: 400)
    /// The same per application, once it has proved itself (its secret, or PKCE's code),
    /// shared by every instance: only the application can spend its own allowance.
    public var tokenRequestsPerClient = Rate.per(second: 50, burst: 1000)
    /// `/auth` answers for a sign-in cookie that names no live session, per address (a known
    /// session never counts): random cookies cannot make each answer a database read.
    public var unknownSessionsPerAddress = Rate.per(second: 5, burst: 100)
    /// Mails to one email address (a code, a new code, an "address in use" notice), counted
    /// across instances: three at once, then one every 12 minutes.
    public var mailsPerRecipient = Rate(burst: 3, perSecond: 5.0 / 3600)
    /// Recovery requests for one account (`POST /recover`), counted across instances,
    /// whatever the address: three at once, then three an hour. Over it the page says the
    /// same and nothing is mailed, so the limit tells nobody the account exists.
    public var recoveriesPerAccount = Rate(burst: 3, perSecond: 3.0 / 3600)
    /// Wrong recovery codes per account, across every recovery of it (issue 52): ten a day.
    /// Each recovery takes five at most; this bounds how many recoveries a guesser can start
    /// to guess in. The mailed link (256 bits) is not a guess and is never held back by it.
    public var recoveryCodesPerAccount = Rate(burst: 10, perSecond: 10.0 / 86_400)
    /// Mails asked for from one client address.
    public var mailsPerAddress = Rate(burst: 10, perSecond: 20.0 / 3600)
    /// Sign-ups posted without a proof of work (no JavaScript), everybody together: bots
    /// that skip the work share this budget with the few people who have no JavaScript.
    public var noJavaScriptSignups = Rate.per(minute: 10, burst: 10)
    /// Recovery requests and codes posted without a proof of work, everybody together: a
    /// budget of their own, so a flood of them never turns away a person signing up without
    /// JavaScript.
    public var noJavaScriptRecoveries = Rate.per(minute: 10, burst: 10)
    /// Password hashes (sign-ups and sign-ins) one address may have queued or running.
    public var hashesPerAddress = 2
    /// Password hashes waiting per kind (sign-up, sign-in) before new ones get 503.
    public var hashQueueLength = 256
    /// Signed-in sessions one account keeps at once: a new sign-in ends the least recently
    /// used beyond it, so no account's page (and its live list) grows without bound.
    public var signInSessionsPerAccount = 50
    /// How long a live look-up may be delayed by its limits before it is not made at all.
    public var maximumLookupDelay: TimeInterval = 30

    public init() {}

    /// No limits at all (tests that are about something else).
    public static var none: SignupLimits {
        var limits = SignupLimits()
        limits.pagesPerAddress = .unlimited
        limits.newSessionsPerAddress = .unlimited
        limits.liveSessionsPerAddress = .max
        limits.editsPerSession = .unlimited
        limits.editsPerAddress = .unlimited
        limits.lookupsPerSession = .unlimited
        limits.lookupsPerAddress = .unlimited
        limits.signupsPerAddress = .unlimited
        limits.signinFailuresPerAccount = .unlimited
        limits.signinFailuresPerAddress = .unlimited
        limits.secondFactorFailuresPerAccount = .unlimited
        limits.mailsPerRecipient = .unlimited
        limits.mailsPerAddress = .unlimited
        limits.recoveriesPerAccount = .unlimited
        limits.recoveryCodesPerAccount = .unlimited
        limits.noJavaScriptSignups = .unlimited
        limits.noJavaScriptRecoveries = .unlimited
        limits.passkeysPerAddress = .unlimited
        limits.tokenRequestsPerAddress = .unlimited
        limits.tokenRequestsPerClient = .unlimited
        limits.unknownSessionsPerAddress = .unlimited
        limits.hashesPerAddress = 1_000_000
        limits.signInSessionsPerAccount = 1_000_000
        return limits
    }
}
