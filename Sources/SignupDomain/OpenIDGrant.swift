import Foundation

/// What a person granted an application in one sign-in through LiveSignup as its OpenID
/// provider (issue 56): the family every code and token of that sign-in belongs to, so a
/// reused code or refresh token revokes all of it at once.
public struct OpenIDGrant: Sendable, Equatable {
    /// Random; never shown to the person.
    public let id: String
    public let clientID: String
    public let accountID: Int64
    /// The scopes granted, in request order.
    public let scopes: [String]
    /// The signed-in session's public handle: the ID token's `sid`, which back-channel logout
    /// names when that session ends.
    public let sessionID: String
    /// When the person proved who they are in that session (the ID token's `auth_time`).
    public let authTime: Date
    /// How they proved it (the ID token's `amr`, RFC 8176 values).
    public let methods: [String]
    public let createdAt: Date
    /// When its last token expires; then the sweep forgets it.
    public let expiresAt: Date

    public init(id: String, clientID: String, accountID: Int64, scopes: [String], sessionID: String, authTime: Date,
                methods: [String], createdAt: Date, expiresAt: Date) {
        self.id = id
        self.clientID = clientID
        self.accountID = accountID
        self.scopes = scopes
        self.sessionID = sessionID
        self.authTime = authTime
        self.methods = methods
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// An authorization code as stored: only its SHA-256, with what redeeming it must match.
public struct AuthorizationCode: Sendable, Equatable {
    public let codeHash: String
    public let grant: OpenIDGrant
    /// The redirect URI it was sent to; the token request must name the same (RFC 6749 §4.1.3).
    public let redirectURI: String
    /// PKCE's S256 challenge, when the application sent one (a public client must).
    public let codeChallenge: String?
    /// The application's `nonce`, returned in the ID token.
    public let nonce: String?
    /// Codes live a minute (OpenID Connect Core §3.1.3.2 wants them short).
    public let expiresAt: Date

    public init(codeHash: String, grant: OpenIDGrant, redirectURI: String, codeChallenge: String?, nonce: String?, expiresAt: Date) {
        self.codeHash = codeHash
        self.grant = grant
        self.redirectURI = redirectURI
        self.codeChallenge = codeChallenge
        self.nonce = nonce
        self.expiresAt = expiresAt
    }
}

/// The two tokens a redeemed code or a rotated refresh token yields, as stored: their SHA-256
/// hashes and when each expires.
public struct TokenPair: Sendable, Equatable {
    public let accessHash: String
    public let accessExpiresAt: Date
    public let refreshHash: String
    public let refreshExpiresAt: Date

    public init(accessHash: String, accessExpiresAt: Date, refreshHash: String, refreshExpiresAt: Date) {
        self.accessHash = accessHash
        self.accessExpiresAt = accessExpiresAt
        self.refreshHash = refreshHash
        self.refreshExpiresAt = refreshExpiresAt
    }
}

/// What spending a code or a refresh token found.
public enum GrantRedemption: Sendable, Equatable {
    /// It was live and is now spent; the new tokens are stored.
    case redeemed(AuthorizationCode)
    /// A refresh token rotated: its grant, the new pair stored.
    case rotated(OpenIDGrant)
    /// It was spent before: someone holds a copy, so the grant is revoked (every token it
    /// issued), and nothing new is issued.
    case reused(grantID: String)
    /// A live code its redeemer did not match (another client, redirect URI or verifier):
    /// spent, its grant ended, nothing issued.
    case refused(AuthorizationCode)
    /// Unknown, expired or revoked.
    case unknown
}

/// A live access token and its grant (userinfo, introspection).
public struct LiveAccessToken: Sendable, Equatable {
    public let grant: OpenIDGrant
    public let expiresAt: Date

    public init(grant: OpenIDGrant, expiresAt: Date) {
        self.grant = grant
        self.expiresAt = expiresAt
    }
}

/// An application a person let learn about them (`/account`'s list), and what it may learn.
public struct ClientConsent: Sendable, Equatable {
    public let clientID: String
    public let scopes: [String]
    public let grantedAt: Date

    public init(clientID: String, scopes: [String], grantedAt: Date) {
        self.clientID = clientID
        self.scopes = scopes
        self.grantedAt = grantedAt
    }
}

extension ClientConsent {
    /// `before` widened by `added`, in first-seen order, each scope once.
    public static func union(_ before: [String], _ added: [String]) -> [String] {
        var seen = Set<String>()
        return (before + added).filter { seen.insert($0).inserted }
    }

    /// One entry per application, by client id: its consent when there is one, else its live
    /// grants' scopes together and the first grant's date (an application without a consent
    /// page still shows, and can be revoked).
    public static func merged(consents: [ClientConsent], grants: [ClientConsent]) -> [ClientConsent] {
        var byClient: [String: ClientConsent] = [:]
        for consent in consents { byClient[consent.clientID] = consent }
        let consented = Set(byClient.keys)
        for grant in grants where !consented.contains(grant.clientID) {
            if let known = byClient[grant.clientID] {
                byClient[grant.clientID] = ClientConsent(clientID: grant.clientID, scopes: union(known.scopes, grant.scopes),
                                                         grantedAt: min(known.grantedAt, grant.grantedAt))
            } else {
                byClient[grant.clientID] = grant
            }
        }
        return byClient.values.sorted { ($0.grantedAt, $0.clientID) < ($1.grantedAt, $1.clientID) }
    }
}

/// The OpenID provider's codes, tokens and consents, shared by every instance (issue 56).
/// Only hashes of codes and tokens are stored; each spend is one statement, so a code is
/// redeemed once whichever instances race for it.
public protocol OpenIDGrants: Sendable {
    /// Stores a code and its grant, ending the account's oldest grants to the same client
    /// beyond `keep` (a client that signs in in a loop holds at most `keep` families).
    func storeAuthorizationCode(_ code: AuthorizationCode, keepingAtMost keep: Int) throws

    /// Spends the code with this hash if it is live at `now`, and in the same transaction
    /// stores `tokens` for its grant when `accepts` the code (its client, redirect URI and
    /// PKCE verifier match), or ends its grant when not (`.refused`: nothing issued, and the
    /// code cannot be tried again). A code spent before revokes its grant (`.reused`).
    func redeemAuthorizationCode(hash: String, at now: Date, issuing tokens: TokenPair,
                                 if accepts: @escaping @Sendable (AuthorizationCode) -> Bool) throws -> GrantRedemption

    /// Spends a live refresh token of `clientID`'s and stores `tokens` in its place (the
    /// grant then lives until the new refresh token expires); one spent before revokes its
    /// grant (`.reused`). Another client's token is `.unknown` and left alone.
    func rotateRefreshToken(hash: String, clientID: String, at now: Date, issuing tokens: TokenPair) throws -> GrantRedemption

    /// The live access token with this hash, with its grant.
    func accessToken(hash: String, at now: Date) throws -> LiveAccessToken?

    /// The grant a live token (either kind) of `clientID`'s with this hash belongs to, and
    /// whether it is a refresh token.
    func token(hash: String, clientID: String, at now: Date) throws -> (grant: OpenIDGrant, isRefresh: Bool)?

    /// Ends one access token (revocation of an access token, RFC 7009 §2.1).
    func revokeAccessToken(hash: String) throws

    /// Ends a grant: its codes and every token it issued. False when it was gone.
    @discardableResult
    func revokeGrant(id: String) throws -> Bool

    /// Forgets grants whose tokens have all expired and codes spent or expired long enough
    /// that a reuse no longer needs catching; how many grants went.
    func removeExpiredGrants(at now: Date) throws -> Int

    /// The scopes the account let the client learn, if it did.
    func consent(ofAccount id: Int64, client clientID: String) throws -> ClientConsent?

    /// Records (or widens) the account's consent to the client, with `events` (its webhook).
    func recordConsent(ofAccount id: Int64, client clientID: String, scopes: [String], at date: Date, events: [OutboxEvent]) throws

    /// The applications the account consented to or holds a live grant of at `now`, one each
    /// (a grant's scopes and first date when there is no consent: a first-party application).
    func consents(ofAccount id: Int64, at now: Date) throws -> [ClientConsent]

    /// Withdraws the account's consent to the client and ends every grant it holds there;
    /// how many grants ended.
    func revokeClient(_ clientID: String, ofAccount id: Int64, events: [OutboxEvent]) throws -> Int

    /// Ends the grants whose sign-in session has ended (its row is gone: signed out, ended
    /// from the account page, swept), writing in the same transaction each event `announce`
    /// makes of one (the back-channel logout of its application); how many ended. An
    /// application stays signed in as long as the person's session here lives.
    func endGrantsOfEndedSessions(announcing announce: @escaping @Sendable (OpenIDGrant) -> OutboxEvent?) throws -> Int
}
