import Identity
/// What became of a recovery request: `mailed` (a code went to a proved address),
/// `no_account` (nothing matched: the same page, no mail), `unproved` (the account's address was
/// never proved: no mail), `limited` (the account's or recipient's mails are spent: the same page,
/// no mail), `wrong_code`, `invalid` (an empty request, or a code that is not six digits),
/// `used_up`, `code_accepted`, `expired` (unknown, used or expired code or link), `refused` (the
/// new password broke a rule), `current_password`, `completed`, `unavailable`, `unproved_client`
/// (a refused proof of work), `second_factor_refused` (the account's second-factor code missing,
/// wrong or over its allowance: nothing stored).
/// Counted in `livesignup_recoveries_total{result="…"}`: a public contract (docs/OPERATIONS.md's metrics list), each value
/// named once here, so a typo is a compile error and a new outcome a new case.
enum RecoveryOutcome: String, CaseIterable, Sendable {
    case mailed
    case noAccount = "no_account"
    case unproved
    case limited
    case disabled
    case wrongCode = "wrong_code"
    case invalid
    case usedUp = "used_up"
    case codeAccepted = "code_accepted"
    case expired
    case refused
    case currentPassword = "current_password"
    case completed
    case unavailable
    case unprovedClient = "unproved_client"
    case secondFactorRefused = "second_factor_refused"
}
