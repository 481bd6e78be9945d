/// The limits a 429 can name: the `limit` of a `rate_limited` body and of the
/// `livesignup_rate_limited_total{limit=…}` metric. An enum, so a typo is a compile error
/// instead of a counter nobody increments; each limiter carries its name (`ClientLimiters`).
package enum RateLimitName: String, CaseIterable, Sendable {
    /// Sign-up pages and fresh tokens per address.
    case pages
    /// Form sessions built, or alive at once, per address.
    case sessions
    /// Field edits per form and per address.
    case edits
    /// Username look-ups per form and per address, live or on submit.
    case lookups
    /// `POST /signup` per address.
    case signups
    /// Failed sign-ins per account and per address.
    case signins
    /// Mails (codes, notices) per recipient address and per client address.
    case mails
    /// Password hashes queued or running per address.
    case hashing
    /// Sign-up posts without a proof of work, all clients together.
    case noJavaScript = "no_javascript"
    /// Passkey ceremonies per address.
    case passkeys
    /// `/auth` asked about sign-in cookies that name no live session, per address.
    case unknownSessions = "unknown_sessions"
    /// The OpenID provider's endpoints applications call (token, userinfo, revocation,
    /// introspection), per address: an application's server signs many people in.
    case tokens
}
