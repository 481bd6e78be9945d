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
}
