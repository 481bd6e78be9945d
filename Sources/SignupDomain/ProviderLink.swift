import Foundation

/// An OpenID Connect provider the operator configured (`providers` in a policy file): a
/// person may sign up or sign in through it. The client secret is never in the file, only
/// the name of the environment variable that holds it.
public struct ProviderDeclaration: Sendable, Equatable {
    /// Short and stable: in URLs, metrics, logs, and each link stored (`[a-z0-9_-]`, 1 to 32).
    public var id: String
    /// What the button says: "Continue with <name>".
    public var name: String
    /// The issuer exactly as the provider names itself in its tokens.
    public var issuer: String
    public var clientID: String
    /// The environment variable the client secret is read from at start.
    public var clientSecretVariable: String
    public var scopes: [String]
    /// Whether the provider's `email_verified: true` proves an address here (only for a
    /// provider that really proves addresses: a company's own login, a large mail provider).
    public var trustsEmailVerified: Bool
    /// Hosts besides the issuer's that its token endpoint and key set may be on
    /// (`endpoint_hosts`); any other host in its discovery document is refused.
    public var endpointHosts: [String] = []

    public init(id: String, name: String, issuer: String, clientID: String, clientSecretVariable: String,
                scopes: [String] = ["openid", "email", "profile"], trustsEmailVerified: Bool = false) {
        self.id = id
        self.name = name
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecretVariable = clientSecretVariable
        self.scopes = scopes
        self.trustsEmailVerified = trustsEmailVerified
    }

    /// Whether `id` is one a declaration may have.
    public static func isValidID(_ id: String) -> Bool {
        id.wholeMatch(of: #/[a-z0-9_-]{1,32}/#) != nil
    }
}

/// A provider identity to link: which provider said it, and who (`issuer` and `subject`,
/// never the address, which a provider may let its users change). `email` is what the
/// provider said when it was linked, shown to the owner only.
public struct NewProviderLink: Sendable, Equatable, Codable {
    public let provider: String
    public let issuer: String
    public let subject: String
    public let email: String

    public init(provider: String, issuer: String, subject: String, email: String) {
        self.provider = provider
        self.issuer = issuer
        self.subject = subject
        self.email = email
    }
}

/// An identity linked to an account.
public struct ProviderLink: Sendable, Equatable {
    public let accountID: Int64
    public let provider: String
    public let issuer: String
    public let subject: String
    public let email: String
    public let linkedAt: Date

    public init(accountID: Int64, provider: String, issuer: String, subject: String, email: String, linkedAt: Date) {
        self.accountID = accountID
        self.provider = provider
        self.issuer = issuer
        self.subject = subject
        self.email = email
        self.linkedAt = linkedAt
    }
}

public enum ProviderLinkError: Error, Equatable {
    /// The identity is linked to another account already.
    case linkedElsewhere
}

/// Provider identities linked to accounts, shared by every instance using the store.
public protocol ProviderLinks: Sendable {
    /// The account an identity is linked to.
    func account(linkedTo issuer: String, subject: String) throws -> Account?

    func providerLinks(ofAccount id: Int64) throws -> [ProviderLink]

    /// Links an identity, with `events`; throws `ProviderLinkError.linkedElsewhere` when
    /// another account has it. Linking one the account has already changes nothing.
    func linkProvider(_ link: NewProviderLink, toAccount id: Int64, at date: Date, events: [OutboxEvent]) throws

    /// Unlinks one of the account's identities, never its last way in, with `events`.
    func unlinkProvider(issuer: String, subject: String, fromAccount id: Int64, events: [OutboxEvent]) throws -> WayInRemoval
}
