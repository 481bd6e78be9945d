import Foundation

/// Where accounts live. A protocol so another engine can replace SQLite later.
public protocol AccountStore: Sendable {
    /// Whether a username (compared in canonical form, see `Username.canonical`) is in use.
    func isUsernameTaken(_ username: String) throws -> Bool

    /// Adds accounts that cannot sign in, so their names show as taken (for demos and tests).
    /// Names already present are skipped.
    func reserveUsernames(_ usernames: [String]) throws

    /// Stores a new account atomically; throws `AccountCreationError` when its canonical
    /// username or its form token is already used, leaving the store unchanged.
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

    // MARK: Signed-in sessions, shared by every instance and surviving restarts

    /// Records a new signed-in session.
    func startSignInSession(_ session: NewSignInSession) throws

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
}
