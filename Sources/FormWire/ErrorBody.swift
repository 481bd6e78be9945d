/// Every JSON error answer: `{"error":"<code>","message":"<readable sentence>"}`, plus for
/// `429` which limit was hit and when to retry.
public struct ErrorBody: Codable, Equatable, Sendable {
    /// A stable machine-readable code, e.g. "unknown_session", "rate_limited".
    public var error: String
    public var message: String
    /// For `rate_limited`: "pages", "sessions", "edits", "lookups", …
    public var limit: String?
    /// For `rate_limited`: whole seconds, as in `Retry-After`.
    public var retryAfter: Int?
    /// For `proof_refused` and `proof_stale`: why ("malformed", "forged", "foreign_form",
    /// "replayed", "expired", "too_cheap").
    public var reason: String?

    public init(error: String, message: String, limit: String? = nil, retryAfter: Int? = nil, reason: String? = nil) {
        self.error = error
        self.message = message
        self.limit = limit
        self.retryAfter = retryAfter
        self.reason = reason
    }
}
