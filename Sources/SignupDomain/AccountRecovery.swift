import Foundation

/// A way back into an account whose owner forgot the password: the keyed hashes of a
/// six-digit code and of a link mailed to the account's proved address, how long they work,
/// and how many wrong codes were typed. Stored hashed, spent once, by a POST only.
///
/// A request for a name or address with no account (or no proved address) stores a recovery
/// too, with no account and hashes nothing matches: its page, its code form and its answers
/// to wrong codes are then the same as a real one's, so nobody learns which names exist.
public struct AccountRecovery: Sendable, Equatable {
    /// The code form carries it (random, public: it proves nothing without the code).
    public let token: String
    /// Nil for a stand-in (no account matched): nothing can complete it.
    public let accountID: Int64?
    /// `VerificationSecrets.codeHash` of the mailed code, bound to `token`.
    public let codeHash: String
    /// `VerificationSecrets.linkHash` of the mailed link (or, after a right code, of the
    /// secret that opened the new-password form in this browser).
    public let linkHash: String
    public let wrongTries: Int
    /// The language tag the person asked in, for the pages and mails that follow.
    public let language: String
    public let expiresAt: Date
    public let createdAt: Date

    public init(token: String, accountID: Int64?, codeHash: String, linkHash: String, wrongTries: Int = 0,
                language: String, expiresAt: Date, createdAt: Date) {
        self.token = token
        self.accountID = accountID
        self.codeHash = codeHash
        self.linkHash = linkHash
        self.wrongTries = wrongTries
        self.language = language
        self.expiresAt = expiresAt
        self.createdAt = createdAt
    }
}

/// What the store did when a recovery completed.
public struct CompletedRecovery: Sendable, Equatable {
    /// The account with its new password hash.
    public let account: Account
    /// How many signed-in sessions of the account were ended.
    public let endedSessions: Int

    public init(account: Account, endedSessions: Int) {
        self.account = account
        self.endedSessions = endedSessions
    }
}

/// Account recoveries, shared by every instance (a code mailed by one works on another).
public protocol AccountRecoveries: Sendable {
    /// Stores `recovery`, voiding the account's earlier ones, with its mail when there is one
    /// (one transaction: never the one without the other).
    func startRecovery(_ recovery: AccountRecovery, mail: OutboxEvent?) throws

    /// The unexpired recovery with this token.
    func recovery(token: String, at now: Date) throws -> AccountRecovery?

    /// The unexpired recovery whose link (or opened form) has this hash.
    func recovery(linkHash: String, at now: Date) throws -> AccountRecovery?

    /// Spends one try of the code, in one atomic update, before the code is compared: returns
    /// the tries spent so far, or nil when `maximum` were spent already or the recovery is
    /// gone or expired.
    func spendRecoveryTry(token: String, maximum: Int, at now: Date) throws -> Int?

    /// After a right code: the code stops working and `linkHash` (a secret given to this
    /// browser) opens the new-password form instead. False when the recovery is gone.
    func exchangeRecoveryCode(token: String, linkHash: String, at now: Date) throws -> Bool

    /// The new password, in one transaction: the recovery is deleted (it works once), the
    /// hash stored, every signed-in session of the account ended and `events` written to the
    /// outbox (the notice mail, the webhook). Nil when the recovery is gone or expired, or
    /// was a stand-in.
    func completeRecovery(linkHash: String, passwordHash: String, at now: Date,
                          events: @Sendable (Account) -> [OutboxEvent]) throws -> CompletedRecovery?

    /// Deletes recoveries that expired by `now`; returns how many.
    func removeExpiredRecoveries(at now: Date) throws -> Int

    /// The account whose proved address this is (compared canonically).
    func account(withProvedEmail email: String) throws -> Account?

    /// The account with this id.
    func account(id: Int64) throws -> Account?
}
