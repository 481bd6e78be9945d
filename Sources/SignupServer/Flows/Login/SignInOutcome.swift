import Identity
/// What became of a sign-in (password, passkey, provider or the second step).
/// Counted in `livesignup_signins_total{result="…"}`: a public contract (docs/OPERATIONS.md's metrics list), each value
/// named once here, so a typo is a compile error and a new outcome a new case.
enum SignInOutcome: String, CaseIterable, Sendable {
    case success
    case failure
    case rateLimited = "rate_limited"
    case unavailable
    case refused
    case unproved
    case disabled
}
