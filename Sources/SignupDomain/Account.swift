import Foundation

/// A stored account. `passwordHash` is an argon2id string, or "!" for an account that
/// cannot sign in (reserved names).
public struct Account: Sendable, Equatable {
    public let id: Int64
    public let username: String
    public let email: String
    public let passwordHash: String
    public let createdAt: Date
    /// What the policy's stored fields kept (`stored: true`), a JSON object in the store.
    public let profile: [String: ProfileValue]
    /// When its owner proved the address (a code or link from `/verify`); nil for accounts
    /// made without a proof. Only proved addresses are unique among accounts.
    public let emailVerifiedAt: Date?
    /// When an operator disabled it (`signup-server accounts disable`): nobody signs in to it
    /// until it is enabled again; its data stays. Nil for an account in use.
    public let disabledAt: Date?

    public init(id: Int64, username: String, email: String, passwordHash: String, createdAt: Date,
                profile: [String: ProfileValue] = [:], emailVerifiedAt: Date? = nil, disabledAt: Date? = nil) {
        self.disabledAt = disabledAt
        self.id = id
        self.username = username
        self.email = email
        self.passwordHash = passwordHash
        self.createdAt = createdAt
        self.profile = profile
        self.emailVerifiedAt = emailVerifiedAt
    }

    /// Whether it signs in with a password (not a passkey-only or reserved account).
    public var hasPassword: Bool { passwordHash != Self.unusablePasswordHash }

    /// The marker stored instead of a hash for accounts nobody can sign in to.
    public static let unusablePasswordHash = "!"
}

/// What sign-up hands to the store.
public struct NewAccount: Sendable {
    public let username: String
    public let email: String
    public let passwordHash: String
    /// The form session that created it; each can create one account only.
    public let formToken: String
    /// The stored fields' values (see `Account.profile`).
    public let profile: [String: ProfileValue]
    /// Writes `account.created` to the outbox in the same transaction (webhooks configured).
    public let announce: Bool
    /// A passkey made on the sign-up form, stored with the account (its user handle becomes
    /// the account's). An account with a passkey and no password has `Account.unusablePasswordHash`.
    public let passkey: NewPasskey?
    /// An identity from an OpenID provider the account is made with (issue 45), linked in
    /// the same transaction.
    public let providerLink: NewProviderLink?
    /// Set when the address is proved already (a provider whose `email_verified` the
    /// operator trusts said so): stored as proved, and unique like every proved address.
    public let emailVerifiedAt: Date?

    public init(username: String, email: String, passwordHash: String, formToken: String,
                profile: [String: ProfileValue] = [:], announce: Bool = false, passkey: NewPasskey? = nil,
                providerLink: NewProviderLink? = nil, emailVerifiedAt: Date? = nil) {
        self.passkey = passkey
        self.providerLink = providerLink
        self.emailVerifiedAt = emailVerifiedAt
        self.username = username
        self.email = email
        self.passwordHash = passwordHash
        self.formToken = formToken
        self.profile = profile
        self.announce = announce
    }
}

/// Why the store refused a new account.
public enum AccountCreationError: Error, Equatable {
    /// Someone holds the same canonical username (e.g. won a race for it).
    case usernameTaken
    /// This form already created an account (double submit, back button, replay).
    case formAlreadyUsed
    /// Another account proved this email address (compared without regard to case).
    case emailTaken
}
