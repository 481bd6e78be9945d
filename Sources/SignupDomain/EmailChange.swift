import Foundation

/// A signed-in owner's new address, waiting for its proof (a code mailed to it): the old
/// address stays the account's until then (issue 43). A stand-in for an address another
/// account has proved looks the same from outside (its code hash matches no code), so the page
/// says nothing about whose address it is.
public struct EmailChange: Sendable, Equatable {
    public let accountID: Int64
    public let newEmail: String
    /// HMAC of the code under the verification key (`VerificationSecrets.codeHash`, with the
    /// account's change token as its context).
    public let codeHash: String
    public let wrongTries: Int
    public let expiresAt: Date
    public let createdAt: Date

    public init(accountID: Int64, newEmail: String, codeHash: String, wrongTries: Int = 0, expiresAt: Date, createdAt: Date) {
        self.accountID = accountID
        self.newEmail = newEmail
        self.codeHash = codeHash
        self.wrongTries = wrongTries
        self.expiresAt = expiresAt
        self.createdAt = createdAt
    }
}

/// What `EmailChanges.completeEmailChange` did.
public enum EmailChangeCompletion: Sendable, Equatable {
    /// The account now has the new, proved address; `previous` is the one it replaced.
    case changed(account: Account, previous: String)
    /// Another account proved the address meanwhile: nothing changed.
    case taken
    /// No change waits (never started, expired, or done).
    case none
}

/// Address changes and their undo links, shared by every instance.
public protocol EmailChanges: Sendable {
    /// Starts (or replaces) the account's address change, with its mail, in one transaction.
    func startEmailChange(_ change: EmailChange, mail: OutboxEvent?) throws

    /// The account's waiting change, if it has not expired by `now`.
    func emailChange(ofAccount id: Int64, at now: Date) throws -> EmailChange?

    /// Counts a try, atomically before the code is compared; the tries spent so far with
    /// this one, or nil when no change waits or `maximum` were spent already.
    func spendEmailChangeTry(ofAccount id: Int64, maximum: Int, at now: Date) throws -> Int?

    /// Makes the waiting change the account's proved address, in one transaction with an undo
    /// link for the old address (`undoLinkHash`, until `undoUntil`) and `events` (the notice
    /// to the old address, the webhook).
    func completeEmailChange(ofAccount id: Int64, at now: Date, undoLinkHash: String, undoUntil: Date,
                             events: @Sendable (Account, String) -> [OutboxEvent]) throws -> EmailChangeCompletion

    /// The old address back, through its undo link (once, within its week): the address
    /// restored unless another account proved it meanwhile, every session of the account
    /// ended (whoever changed it is signed out), open recoveries dropped, `events` written.
    /// Nil when the link is unknown, used or expired; `.taken` as for a completion.
    func undoEmailChange(linkHash: String, at now: Date, events: @Sendable (Account) -> [OutboxEvent]) throws -> EmailChangeUndo?

    /// Forgets expired changes and undo links; returns how many.
    func removeExpiredEmailChanges(at now: Date) throws -> Int
}

/// What an undo link did.
public enum EmailChangeUndo: Sendable, Equatable {
    /// The old address is back, and with it the account as it was at the change: what was
    /// added since (`removed`) is gone.
    case restored(Account, removed: UndoneWaysIn)
    /// Another account proved the old address meanwhile: the link is spent, nothing restored.
    case taken
}

/// What an undone address change took away (issue 52): every way in added to the account
/// since the change, when whoever changed the address may have added it.
public struct UndoneWaysIn: Sendable, Equatable {
    /// Passkeys made since the change.
    public var passkeys = 0
    /// Provider identities linked since the change.
    public var providers = 0
    /// A second factor set up (or switched on) since the change.
    public var secondFactor = false
    /// The password was changed (or set) since: the one from before the change is back.
    public var password = false

    public init(passkeys: Int = 0, providers: Int = 0, secondFactor: Bool = false, password: Bool = false) {
        self.passkeys = passkeys
        self.providers = providers
        self.secondFactor = secondFactor
        self.password = password
    }

    public var isEmpty: Bool { passkeys == 0 && providers == 0 && !secondFactor && !password }
}
