import Crypto
import Foundation
import JWTKit
import OpenIDConnect
import SignupDomain
import WebAuthn

/// A client as the server knows it: its declaration and, for a confidential one, the secret
/// read from its variable at start.
package struct RegisteredClient: Sendable {
    package let declaration: ClientDeclaration
    package let secret: String?

    package init(declaration: ClientDeclaration, secret: String?) {
        self.declaration = declaration
        self.secret = secret
    }

    package var id: String { declaration.id }
}

/// LiveSignup as an OpenID provider (issue 56): codes for a signed-in person, and the token
/// endpoint's answers. Codes and tokens are random and only their SHA-256 is stored, so a
/// copy of the database signs nobody in anywhere. Access tokens are opaque (introspection
/// says what they grant, and revocation ends them at once); ID tokens are ES256 JWTs made
/// by jwt-kit with the store's signing key.
package struct AuthorizationServer: Sendable {
    package let store: any AccountStore
    package let signingKeys: SigningKeys
    package let clients: [String: RegisteredClient]
    /// This site as configured: the `iss` of every token and answer.
    package let issuer: @Sendable () -> String
    /// Makes `sub` from the account's number: stable, the same for every application, and
    /// neither the address nor a count of the accounts.
    private let subjectKey: SymmetricKey
    package let now: @Sendable () -> Date

    package static let codeLifetime: TimeInterval = 60
    package static let accessTokenLifetime: TimeInterval = 600
    package static let refreshTokenLifetime: TimeInterval = 14 * 86_400
    /// Within `SigningKeys.tokenLifetime`, so a replaced key outlives what it signed.
    package static let idTokenLifetime: TimeInterval = 600
    /// A reused code is still caught this long after it expired (then its grant is swept).
    package static let spentCodeMemory: TimeInterval = 600
    /// Grants one account holds at one client at once; the oldest end first.
    package static let grantsPerAccountAndClient = 20

    package init(store: any AccountStore, signingKeys: SigningKeys, clients: [RegisteredClient], issuer: @escaping @Sendable () -> String,
                 subjectKey: [UInt8], now: @escaping @Sendable () -> Date) {
        self.store = store
        self.signingKeys = signingKeys
        self.clients = Dictionary(clients.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        declarations = self.clients.mapValues(\.declaration)
        self.issuer = issuer
        self.subjectKey = SymmetricKey(data: subjectKey)
        self.now = now
    }

    /// The clients as the policy declared them, by id (what an authorization request is read against).
    package let declarations: [String: ClientDeclaration]

    /// How metrics name the application `id` (as a request spelled it): its configured id, or
    /// `unknown`. One fixed label per client: a spelling Swift's String finds the client under
    /// (canonically equal, "\u{212A}" for "K") is never a new label.
    package func metricLabel(clientID id: String?) -> String {
        id.flatMap { clients[$0]?.id } ?? "unknown"
    }

    /// The account's `sub`.
    package func subject(of accountID: Int64) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("account:\(accountID)".utf8), using: subjectKey)
        return Base64URL.encode(Array(mac))
    }

    // MARK: The authorization endpoint

    /// A code for `request`, granted by `account` in `session`; the redirect that carries it.
    package func issueCode(for request: AuthorizationRequest, account: Account, session: SignInSessionSummary) throws -> String {
        let code = PKCE.randomToken(bytes: 32), time = now()
        let grant = OpenIDGrant(id: PKCE.randomToken(bytes: 16), clientID: request.client.id, accountID: account.id,
                                scopes: request.scopes, sessionID: session.publicID, authTime: session.authenticatedAt,
                                methods: session.methods, createdAt: time,
                                expiresAt: time.addingTimeInterval(Self.codeLifetime + Self.spentCodeMemory))
        try store.storeAuthorizationCode(
            AuthorizationCode(codeHash: Self.hash(code), grant: grant, redirectURI: request.redirectURI,
                              codeChallenge: request.codeChallenge, nonce: request.nonce,
                              expiresAt: time.addingTimeInterval(Self.codeLifetime)),
            keepingAtMost: Self.grantsPerAccountAndClient)
        return request.redirect([("code", code)], issuer: issuer())
    }

    // MARK: The token endpoint

    /// An error of the token, revocation or introspection endpoint (RFC 6749 §5.2).
    package struct TokenError: Error, Equatable, Sendable {
        package let code: String
        package let description: String
        /// 401 for a client that failed to prove itself (with `WWW-Authenticate` when it used
        /// Basic), else 400.
        package let status: Int

        package init(code: String, description: String, status: Int) {
            self.code = code
            self.description = description
            self.status = status
        }

        package static func invalidClient(_ description: String) -> TokenError {
            TokenError(code: "invalid_client", description: description, status: 401)
        }

        package static func invalidGrant(_ description: String) -> TokenError {
            TokenError(code: "invalid_grant", description: description, status: 400)
        }

        package static func invalidRequest(_ description: String) -> TokenError {
            TokenError(code: "invalid_request", description: description, status: 400)
        }
    }

    /// The client a token request comes from, proved by its secret (HTTP Basic or the form;
    /// RFC 6749 §2.3.1) or, for a public client, by its id alone (PKCE proves the rest).
    package func authenticate(authorization: String?, form: (String) -> String?) throws(TokenError) -> RegisteredClient {
        var id = form("client_id")
        let secret = form("client_secret")
        /// The secret as the Basic header spells it, and form-decoded.
        var secretReadings: [String]?
        if let authorization, authorization.lowercased().hasPrefix("basic ") {
            guard secret == nil else { throw .invalidRequest("one way of client authentication at a time") }
            guard let (rawID, rawSecret) = Self.basic(authorization) else {
                throw .invalidClient("the Authorization header is not Basic client_id:client_secret")
            }
            // RFC 6749 §2.3.1 form-encodes both halves before Basic; many clients do not. The
            // id is an id either way; the secret counts if either reading of it matches.
            let basicID = Self.formDecoded(rawID) ?? rawID
            if let id, id != basicID { throw .invalidRequest("client_id differs from the Authorization header's") }
            id = basicID
            secretReadings = [rawSecret] + (Self.formDecoded(rawSecret).map { [$0] } ?? [])
        }
        guard let id, let client = clients[id] else { throw .invalidClient("unknown client") }
        if let expected = client.secret {
            let readings = secretReadings ?? secret.map { [$0] } ?? []
            // Every reading compared, each in constant time, so the time says nothing of which.
            let matched = readings.map { OpenIDProvider.constantTimeEqual($0, expected) }.contains(true)
            guard matched else { throw .invalidClient(readings.isEmpty ? "the client secret is missing" : "wrong client secret") }
        } else if !(secret ?? "").isEmpty || secretReadings?.contains(where: { !$0.isEmpty }) == true {
            // `client_id:` with nothing after it (some libraries' Basic for a public client) is no secret.
            throw .invalidClient("a public client has no secret")
        }
        return client
    }

    /// What the token endpoint answers with: the tokens, as RFC 6749 §5.1 names them.
    package struct Tokens: Sendable, Encodable {
        package let access_token: String
        package let token_type: String
        package let expires_in: Int
        package let refresh_token: String
        package let id_token: String
        package let scope: String
    }

    /// `grant_type=authorization_code`: spends the code, once, for the client it was given to.
    package func redeem(code: String?, redirectURI: String?, verifier: String?, client: RegisteredClient) throws -> Tokens {
        guard let code, !code.isEmpty, code.utf8.count <= 256 else { throw TokenError.invalidRequest("code is missing") }
        guard let redirectURI else { throw TokenError.invalidRequest("redirect_uri is missing") }
        if let verifier, verifier.wholeMatch(of: #/[A-Za-z0-9._~-]{43,128}/#) == nil {
            throw TokenError.invalidRequest("code_verifier must be 43 to 128 unreserved characters")
        }
        let pair = TokenPairValues(now: now())
        let clientID = client.id
        switch try store.redeemAuthorizationCode(hash: Self.hash(code), at: now(), issuing: pair.stored, if: { stored in
            stored.grant.clientID == clientID && stored.redirectURI == redirectURI
                && Self.verifies(verifier, challenge: stored.codeChallenge)
        }) {
        case .redeemed(let stored):
            return try tokens(pair, stored.grant, nonce: stored.nonce)
        case .refused(let stored):
            if stored.grant.clientID != clientID { throw TokenError.invalidGrant("the code was not issued to this client") }
            if stored.redirectURI != redirectURI { throw TokenError.invalidGrant("redirect_uri differs from the authorization request's") }
            throw TokenError.invalidGrant(verifier == nil ? "code_verifier is missing" : "code_verifier does not match the code_challenge")
        case .reused:
            throw TokenError.invalidGrant("the code was used before; what it issued is revoked")
        case .rotated, .unknown:
            throw TokenError.invalidGrant("the code is unknown or expired")
        }
    }

    /// `grant_type=refresh_token`: the token is spent and a new pair issued; one spent before
    /// revokes its family.
    package func refresh(token: String?, client: RegisteredClient) throws -> Tokens {
        guard let token, !token.isEmpty, token.utf8.count <= 256 else { throw TokenError.invalidRequest("refresh_token is missing") }
        let pair = TokenPairValues(now: now())
        switch try store.rotateRefreshToken(hash: Self.hash(token), clientID: client.id, at: now(), issuing: pair.stored) {
        case .rotated(let grant):
            return try tokens(pair, grant, nonce: nil)
        case .reused:
            throw TokenError.invalidGrant("the refresh token was used before; its grant is revoked")
        case .redeemed, .refused, .unknown:
            throw TokenError.invalidGrant("the refresh token is unknown, expired or revoked")
        }
    }

    private func tokens(_ pair: TokenPairValues, _ grant: OpenIDGrant, nonce: String?) throws -> Tokens {
        guard let account = try store.account(id: grant.accountID), account.disabledAt == nil else {
            _ = try store.revokeGrant(id: grant.id)
            throw TokenError.invalidGrant("the account is gone or disabled")
        }
        return Tokens(access_token: pair.access, token_type: "Bearer", expires_in: Int(Self.accessTokenLifetime),
                      refresh_token: pair.refresh, id_token: try idToken(grant, account: account, nonce: nonce),
                      scope: grant.scopes.joined(separator: " "))
    }

    // MARK: ID tokens and claims

    /// The claims `userinfo` and the ID token say of the account, as far as the scopes allow:
    /// the address only when it was proved (never an address someone merely typed).
    package func claims(of account: Account, scopes: [String]) -> [String: ClaimValue] {
        var claims: [String: ClaimValue] = ["sub": .text(subject(of: account.id))]
        if scopes.contains("profile") { claims["preferred_username"] = .text(account.username) }
        if scopes.contains("email"), account.emailVerifiedAt != nil, !account.email.isEmpty {
            claims["email"] = .text(account.email)
            claims["email_verified"] = .flag(true)
        }
        return claims
    }

    private func idToken(_ grant: OpenIDGrant, account: Account, nonce: String?) throws -> String {
        let key = try signer(for: grant.clientID)
        let issued = Int(now().timeIntervalSince1970)
        var all = claims(of: account, scopes: grant.scopes)
        all["iss"] = .text(issuer())
        all["aud"] = .text(grant.clientID)
        all["azp"] = .text(grant.clientID)
        all["iat"] = .number(issued)
        all["exp"] = .number(issued + Int(Self.idTokenLifetime))
        all["auth_time"] = .number(Int(grant.authTime.timeIntervalSince1970))
        all["sid"] = .text(grant.sessionID)
        if !grant.methods.isEmpty { all["amr"] = .list(grant.methods) }
        all["acr"] = .text(grant.methods.contains("mfa") ? "2" : "1")
        if let nonce { all["nonce"] = .text(nonce) }
        return try sign(all, with: key)
    }

    /// The key that signs for `clientID` now: of the algorithm it registered.
    private func signer(for clientID: String) throws -> SigningKey {
        let algorithm = clients[clientID]?.declaration.idTokenAlgorithm ?? "ES256"
        guard let key = try signingKeys.ring(algorithm).signer(at: now()) else {
            throw StorageFault("no \(algorithm) signing key signs yet")
        }
        return key
    }

    /// `claims` as a JWT signed by `key` (the ring's signer), its `kid` in the header.
    private func sign(_ claims: [String: ClaimValue], with key: SigningKey) throws -> String {
        let payload = IDTokenPayload(claims: claims), kid = JWKIdentifier(string: key.id)
        return try OpenIDProvider.waitFor {
            let keys = JWTKeyCollection()
            try await Self.add(key, to: keys, privately: true)
            return try await keys.sign(payload, kid: kid)
        }
    }

    /// `key` in `keys`: its private half to sign with, else its public half to verify with.
    private static func add(_ key: SigningKey, to keys: JWTKeyCollection, privately: Bool) async throws {
        let kid = JWKIdentifier(string: key.id)
        switch key.algorithm {
        case "RS256":
            let rsa = try Insecure.RSA.PrivateKey(pem: key.privateKeyPEM)
            if privately { await keys.add(rsa: rsa, digestAlgorithm: .sha256, kid: kid) }
            else { await keys.add(rsa: rsa.publicKey, digestAlgorithm: .sha256, kid: kid) }
        default:
            let ecdsa = try ES256PrivateKey(pem: key.privateKeyPEM)
            if privately { await keys.add(ecdsa: ecdsa, kid: kid) } else { await keys.add(ecdsa: ecdsa.publicKey, kid: kid) }
        }
    }

    /// What an `id_token_hint` says, if it is an ID token this provider signed with a key it
    /// still publishes (expired or not: RP-initiated logout §2 accepts an expired one): the
    /// application it was issued to, and the session.
    package func idTokenHint(_ token: String) -> (clientID: String, sessionID: String?)? {
        guard token.utf8.count <= 8192, let keys = try? signingKeys.published() else { return nil }
        let payload = try? OpenIDProvider.waitFor { () async throws -> IDTokenPayload in
            let collection = JWTKeyCollection()
            for key in keys { try await Self.add(key, to: collection, privately: false) }
            return try await collection.verify(token, as: IDTokenPayload.self)
        }
        guard let claims = payload?.claims, case .text(let issuer)? = claims["iss"], issuer == self.issuer(),
              case .text(let audience)? = claims["aud"] else { return nil }
        if case .text(let session)? = claims["sid"] { return (audience, session) }
        return (audience, nil)
    }

    // MARK: Back-channel logout

    /// What a back-channel logout event carries through the outbox; the token itself is made
    /// at each attempt, so a retry an hour later is not refused as stale.
    package struct BackchannelLogout: Codable, Sendable {
        package let uri: String
        package let clientID: String
        package let subject: String
        package let sessionID: String
    }

    /// The outbox event telling `grant`'s application that its session ended; nil when the
    /// application did not register a `backchannel_logout_uri`.
    package func backchannelLogoutEvent(for grant: OpenIDGrant, at time: Date) -> OutboxEvent? {
        guard let uri = clients[grant.clientID]?.declaration.backchannelLogoutURI,
              let body = try? JSONEncoder().encode(BackchannelLogout(uri: uri, clientID: grant.clientID,
                                                                     subject: subject(of: grant.accountID), sessionID: grant.sessionID))
        else { return nil }
        return OutboxEvent(id: OutboxEvent.makeID(), type: "openid.backchannel_logout", body: String(decoding: body, as: UTF8.self),
                           createdAt: time, channel: .backchannelLogout)
    }

    /// A logout token (OpenID Connect Back-Channel Logout 1.0 §2.4): who and which session,
    /// the back-channel event, never a nonce; two minutes to live.
    package func logoutToken(_ logout: BackchannelLogout) throws -> String {
        let key = try signer(for: logout.clientID)
        let issued = Int(now().timeIntervalSince1970)
        return try sign([
            "iss": .text(issuer()), "aud": .text(logout.clientID), "iat": .number(issued), "exp": .number(issued + 120),
            "jti": .text(PKCE.randomToken(bytes: 16)), "sub": .text(logout.subject), "sid": .text(logout.sessionID),
            "events": .object(["http://schemas.openid.net/event/backchannel-logout": [:]]),
        ], with: key)
    }

    /// Ends the grants whose session has ended, each application that asked told through
    /// the outbox (the sweep, and right after a sign-out here); how many ended.
    package func endGrantsOfEndedSessions() throws -> Int {
        let server = self, time = now()
        return try store.endGrantsOfEndedSessions { grant in server.backchannelLogoutEvent(for: grant, at: time) }
    }

    // MARK: Userinfo, introspection, revocation

    /// The claims for a live access token (`userinfo`); nil when it is not one.
    package func userinfo(accessToken: String) throws -> [String: ClaimValue]? {
        guard accessToken.utf8.count <= 256, let live = try store.accessToken(hash: Self.hash(accessToken), at: now()),
              let account = try store.account(id: live.grant.accountID), account.disabledAt == nil else { return nil }
        return claims(of: account, scopes: live.grant.scopes)
    }

    /// RFC 7662's answer for `token`, asked by a confidential client (a resource server):
    /// `active` and, for a live access token, what it grants.
    package func introspect(token: String) throws -> [String: ClaimValue] {
        guard token.utf8.count <= 256, let live = try store.accessToken(hash: Self.hash(token), at: now()),
              let account = try store.account(id: live.grant.accountID), account.disabledAt == nil else {
            return ["active": .flag(false)]
        }
        return ["active": .flag(true), "scope": .text(live.grant.scopes.joined(separator: " ")),
                "client_id": .text(live.grant.clientID), "username": .text(account.username), "token_type": .text("Bearer"),
                "exp": .number(Int(live.expiresAt.timeIntervalSince1970)), "sub": .text(subject(of: account.id)),
                "aud": .text(live.grant.clientID), "iss": .text(issuer()),
                "auth_time": .number(Int(live.grant.authTime.timeIntervalSince1970))]
    }

    /// RFC 7009: a client's refresh token ends its grant; its access token ends alone.
    /// Another client's token, or an unknown one, changes nothing (and is not said).
    package func revoke(token: String, client: RegisteredClient) throws {
        guard token.utf8.count <= 256, let (grant, isRefresh) = try store.token(hash: Self.hash(token), clientID: client.id, at: now())
        else { return }
        if isRefresh { _ = try store.revokeGrant(id: grant.id) } else { try store.revokeAccessToken(hash: Self.hash(token)) }
    }

    // MARK: Values

    /// PKCE S256 (RFC 7636 §4.6); a code without a challenge takes no verifier.
    static func verifies(_ verifier: String?, challenge: String?) -> Bool {
        guard let challenge else { return verifier == nil }
        guard let verifier else { return false }
        return OpenIDProvider.constantTimeEqual(PKCE.challenge(for: verifier), challenge)
    }

    package static func hash(_ value: String) -> String { SignInSessionID.hash(value) }

    /// The two halves of an `Authorization: Basic` header, as sent; nil when it is not one.
    package static func basic(_ authorization: String) -> (id: String, secret: String)? {
        guard authorization.lowercased().hasPrefix("basic "),
              let decoded = Data(base64Encoded: String(authorization.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
              let text = String(data: decoded, encoding: .utf8), let colon = text.utf8.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        // The first colon byte (RFC 7617: the user-id has none), not the first Character that
        // is a colon: ":\u{301}" is one Character, and the split would move past it.
        return (String(text[..<colon]), String(text[text.utf8.index(after: colon)...]))
    }

    /// `text` read as `application/x-www-form-urlencoded` ('+' a space, then %XX); nil when
    /// it is not valid encoding.
    package static func formDecoded(_ text: String) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// A new access and refresh token, and what the store keeps of them.
    private struct TokenPairValues {
        let access = PKCE.randomToken(bytes: 32)
        let refresh = PKCE.randomToken(bytes: 32)
        let stored: TokenPair

        init(now: Date) {
            stored = TokenPair(accessHash: AuthorizationServer.hash(access),
                               accessExpiresAt: now.addingTimeInterval(AuthorizationServer.accessTokenLifetime),
                               refreshHash: AuthorizationServer.hash(refresh),
                               refreshExpiresAt: now.addingTimeInterval(AuthorizationServer.refreshTokenLifetime))
        }
    }
}

/// A claim's value, as JSON writes it.
package enum ClaimValue: Sendable, Equatable, Codable {
    case text(String)
    case number(Int)
    case flag(Bool)
    case list([String])
    /// A JSON object of objects (`events` in a logout token).
    case object([String: [String: String]])

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .text(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .flag(let value): try container.encode(value)
        case .list(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) { self = .flag(value) }
        else if let value = try? container.decode(Int.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .text(value) }
        else if let value = try? container.decode([String].self) { self = .list(value) }
        else { self = .object(try container.decode([String: [String: String]].self)) }
    }
}

/// The ID token's claims for jwt-kit, which signs whatever the payload encodes.
struct IDTokenPayload: JWTPayload {
    let claims: [String: ClaimValue]

    func encode(to encoder: any Encoder) throws { try claims.encode(to: encoder) }

    init(claims: [String: ClaimValue]) { self.claims = claims }

    init(from decoder: any Decoder) throws { claims = try [String: ClaimValue](from: decoder) }

    /// Never called: LiveSignup signs these, and relying parties verify them.
    func verify(using algorithm: some JWTAlgorithm) throws {}
}
