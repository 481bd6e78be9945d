import Foundation

/// Where accounts live. A protocol so another engine can replace SQLite later.
public protocol AccountStore: SharedTokenBuckets, EventOutbox, PendingSignups, SpentProofs, PasskeyStore, ProviderLinks, FunnelCounts,
    AccountRecoveries, AccountChanges, EmailChanges, SecondFactors, OpenIDGrants {
    /// Whether a username (compared in canonical form, see `Username.canonical`) is in use:
    /// by an account, or held at `now` by a sign-up waiting for its address to be proved.
    func isUsernameTaken(_ username: String, at now: Date) throws -> Bool

    /// Adds accounts that cannot sign in, so their names show as taken (for demos and tests).
    /// Names already present are skipped.
    func reserveUsernames(_ usernames: [String]) throws

    /// Stores a new account atomically, with its `account.created` outbox event when it is
    /// to be announced (one transaction: never the one without the other); throws
    /// `AccountCreationError` when its canonical username or its form token is already used,
    /// leaving the store unchanged.
    func createAccount(_ account: NewAccount) throws -> Account

    /// The account with this username, compared in canonical form.
    func account(named username: String) throws -> Account?

    /// Every account, oldest first.
    func allAccounts() throws -> [Account]

    /// Whether a form (by its token) already created an account.
    func isFormTokenUsed(_ formToken: String) throws -> Bool

    /// Throws unless the store can serve requests now (a cheap query, for readiness probes).
    func checkReadiness() throws

    /// A server secret shared by every process using this store (e.g. the key that signs
    /// form tokens): the stored one, or `make()`'s result stored now if there is none.
    func secret(named name: String, createdBy make: () -> [UInt8]) throws -> [UInt8]

    /// The OpenID provider's signing keys (issue 56), every one stored, on every instance.
    func signingKeys() throws -> [SigningKey]
    /// Stores `key`; one with the same id is refused (`StorageFault`), never replaced.
    func addSigningKey(_ key: SigningKey) throws
    /// Forgets the keys with these ids (no token alive names them).
    func removeSigningKeys(ids: [String]) throws

    // MARK: Signed-in sessions, shared by every instance and surviving restarts

    /// Records a new signed-in session.
    func startSignInSession(_ session: NewSignInSession) throws

    /// The same, ending in its transaction every other session of the account but the
    /// `keep - 1` used most recently, so an account holds at most `keep` (issue 52: a sign-in
    /// repeated three hundred times made every watcher of the account page pay for each).
    /// Returns the ended sessions' id hashes (an instance forgets them at once).
    func startSignInSession(_ session: NewSignInSession, keepingAtMost keep: Int) throws -> [String]

    /// The account whose session has this id hash, if the session is live at `now`: before
    /// its expiry and used within `rules.idleTimeout`. A use is written when the last written
    /// one is older than `rules.touchInterval`.
    func signedInAccount(idHash: String, at now: Date, rules: SignInSessionRules) throws -> Account?

    /// Ends one session (sign-out). Ending one that is gone is not an error.
    func endSignInSession(idHash: String) throws

    /// Ends every session of the account with this username; returns how many there were.
    func endSignInSessions(username: String) throws -> Int

    /// Deletes sessions that have ended by `now` (expired or idle); returns how many.
    func removeEndedSignInSessions(at now: Date, rules: SignInSessionRules) throws -> Int

    /// Every live session of the account at `now`, the most recently used first.
    func signInSessions(ofAccount id: Int64, at now: Date, rules: SignInSessionRules) throws -> [SignInSessionSummary]

    /// Ends the account's session with this handle; false when it has none by that handle
    /// (another account's handle ends nothing).
    func endSignInSession(publicID: String, ofAccount id: Int64) throws -> Bool

    /// Ends every session of the account but the one with `keeping` (its id's hash; nil ends
    /// them all); returns how many ended.
    func endSignInSessions(ofAccount id: Int64, keeping idHash: String?) throws -> Int

    /// Records that the session's owner proved who they are again at `date` (a fresh sign-in
    /// for a sensitive change). False when the session is gone.
    func recordAuthentication(idHash: String, at date: Date) throws -> Bool
}

/// Token buckets shared by every instance (limits that must hold across them): each
/// `AccountStore` keeps them as rows; `InMemoryTokenBuckets` where there is one process only.
/// Proof-of-work solutions are single use across every instance sharing the store.
public protocol SpentProofs: Sendable {
    /// Records `challenge` as spent until `expiresAt` (after which its signature refuses it
    /// anyway); false when it was spent already.
    func spendProof(_ challenge: String, until expiresAt: Date) throws -> Bool

    /// Forgets proofs whose challenges have expired; returns how many.
    func removeExpiredProofs(at now: Date) throws -> Int
}

public protocol SharedTokenBuckets: Sendable {
    /// The tokens in `key`'s bucket of `bucket` at `now`, refilled at `rate` (full when it has
    /// no row); spends `cost` of them if at least that many are there. Returns the tokens
    /// there were before spending, so the caller can tell whether it spent (`>= cost`) and how
    /// long to wait otherwise. `cost` 0 only looks.
    func spendSharedTokens(bucket: String, key: String, cost: Double, rate: SharedBucketRate, at now: Date) throws -> Double

    /// Fills `key`'s bucket again (deletes its row).
    func resetSharedTokens(bucket: String, key: String) throws

    /// Deletes the rows of buckets that are full again by `now`; returns how many.
    func removeFullSharedBuckets(at now: Date) throws -> Int
}

/// Shared token buckets for one process (tests, and limits kept without a store).
public final class InMemoryTokenBuckets: SharedTokenBuckets, @unchecked Sendable {
    private let lock = NSLock()
    private var buckets: [String: (tokens: Double, updated: Date, fullAt: Date)] = [:]

    public init() {}

    public func spendSharedTokens(bucket: String, key: String, cost: Double, rate: SharedBucketRate, at now: Date) throws -> Double {
        lock.withLock {
            let name = bucket + " " + key
            let tokens = buckets[name].map { rate.refilled($0.tokens, updated: $0.updated, now: now) } ?? rate.burst
            if cost > 0, tokens >= cost { buckets[name] = (tokens - cost, now, rate.fullAt(tokens - cost, now: now)) }
            return tokens
        }
    }

    public func resetSharedTokens(bucket: String, key: String) throws {
        _ = lock.withLock { buckets.removeValue(forKey: bucket + " " + key) }
    }

    public func removeFullSharedBuckets(at now: Date) throws -> Int {
        lock.withLock {
            let before = buckets.count
            buckets = buckets.filter { $0.value.fullAt > now }
            return before - buckets.count
        }
    }
}

/// Events waiting to go out (webhooks, mails), shared by every instance: each is claimed by
/// one of them at a time, for a lease, and delivered at least once.
public protocol EventOutbox: Sendable {
    /// Up to `limit` of `channel`'s pending events due by `now`, oldest first, leased to the
    /// caller until `now + lease` (no other instance claims them meanwhile; after it, if
    /// nothing was recorded, they are due again).
    func claimDueEvents(channel: OutboxChannel, at now: Date, limit: Int, lease: TimeInterval) throws -> [ClaimedEvent]
    /// A receiver took it (2xx, a mail server's 250). A mail's body is emptied then: it may
    /// hold a code, and nothing needs it any more.
    func markDelivered(eventID: String, attempts: Int, at now: Date) throws
    /// Try again at `next`.
    func scheduleRetry(eventID: String, attempts: Int, at next: Date, error: String) throws
    /// Given up on (a 4xx other than 408/429, or the retry window is over); kept for the operator.
    func park(eventID: String, attempts: Int, error: String) throws
    func outboxStatus(channel: OutboxChannel) throws -> OutboxStatus
    /// Deletes events delivered before `date` (the sweep keeps a week, for the operator's
    /// questions); parked ones stay until the operator acts. Returns how many.
    func removeDeliveredEvents(deliveredBefore date: Date) throws -> Int
}
