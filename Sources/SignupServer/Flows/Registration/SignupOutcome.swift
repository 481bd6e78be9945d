import Identity
/// What became of a sign-up: `created` when the account is made (at once, or when its
/// address is proved), `pending` when a code went to the address first.
/// Counted in `livesignup_signups_total{result="…"}`: a public contract (docs/OPERATIONS.md's metrics list), each value
/// named once here, so a typo is a compile error and a new outcome a new case.
enum SignupOutcome: String, CaseIterable, Sendable {
    case created
    case pending
    case invalid
    case taken
    case alreadyUsed = "already_used"
    case rateLimited = "rate_limited"
    case unavailable
    case refused
    case unproved
}

/// What became of a `/verify` request: `verified`, `wrong_code`, `invalid` (not six digits),
/// `used_up` (too many wrong codes), `expired` (unknown, used or expired), `resent`,
/// `email_taken`, `unavailable`, `unproved` (a refused proof of work).
/// Counted in `livesignup_verifications_total{result="…"}`: a public contract (docs/OPERATIONS.md's metrics list), each value
/// named once here, so a typo is a compile error and a new outcome a new case.
enum VerificationOutcome: String, CaseIterable, Sendable {
    case verified
    case wrongCode = "wrong_code"
    case invalid
    case usedUp = "used_up"
    case expired
    case resent
    case emailTaken = "email_taken"
    case unavailable
    case unproved
}
