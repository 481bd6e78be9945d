import Crypto
import Foundation
import JWTKit
import OutsideHTTP
import Locking

/// One OpenID Connect provider seen from a relying party: its discovery document and keys
/// (fetched through a `BoundedHTTPFetcher`, kept as long as their Cache-Control says, within
/// bounds), the authorization request with PKCE, the code's exchange, and the ID token's
/// checks. Knows nothing about accounts or sign-ups.
///
/// Every call is synchronous on the caller's thread, as `BoundedHTTPFetcher` is: call it from a
/// Dispatch queue, never from Swift concurrency's pool (jwt-kit's key collection is an actor,
/// and its async calls are waited for here with a semaphore, which must not hold a thread of
/// the pool those calls run on).
public final class OpenIDProvider: @unchecked Sendable {
    public struct Settings: Sendable {
        /// The issuer exactly as the provider names itself (`iss`); discovery is at
        /// `issuer + /.well-known/openid-configuration`.
        public let issuer: String
        public let clientID: String
        public let clientSecret: String
        /// Asked for in the authorization request; `openid` is always among them.
        public let scopes: [String]
        /// Hosts besides the issuer's that its token endpoint and key set may be on (Google's
        /// are on googleapis.com): a discovery document that moves them anywhere else is
        /// refused, so a tampered or mistaken one cannot send the code and secret elsewhere.
        public let endpointHosts: Set<String>

        public init(issuer: String, clientID: String, clientSecret: String, scopes: [String], endpointHosts: Set<String> = []) {
            self.issuer = issuer
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.scopes = scopes.contains("openid") ? scopes : ["openid"] + scopes
            self.endpointHosts = Set(endpointHosts.map { $0.lowercased() })
        }
    }

    /// What discovery says that this relying party uses.
    public struct Metadata: Sendable, Equatable {
        public let issuer: String
        public let authorizationEndpoint: URL
        public let tokenEndpoint: URL
        public let jwksURI: URL
        /// `token_endpoint_auth_methods_supported` has `client_secret_basic` (the default) or only `client_secret_post`.
        public let sendsSecretInBody: Bool
        /// `id_token_signing_alg_values_supported`, or nil when not said.
        public let signingAlgorithms: [String]?
        /// `authorization_response_iss_parameter_supported` (RFC 9207): its answers name it in
        /// `iss`, so an answer without one did not come from it.
        public var namesItselfInAnswers = false

        package init(issuer: String, authorizationEndpoint: URL, tokenEndpoint: URL, jwksURI: URL, sendsSecretInBody: Bool,
                     signingAlgorithms: [String]?, namesItselfInAnswers: Bool = false) {
            self.issuer = issuer
            self.authorizationEndpoint = authorizationEndpoint
            self.tokenEndpoint = tokenEndpoint
            self.jwksURI = jwksURI
            self.sendsSecretInBody = sendsSecretInBody
            self.signingAlgorithms = signingAlgorithms
            self.namesItselfInAnswers = namesItselfInAnswers
        }
    }

    /// How long a discovery document or key set is kept when its answer says nothing, and
    /// the bounds on what it may say (a provider cannot pin a stale key for a year, nor make
    /// every sign-in fetch again).
    public static let defaultLifetime: TimeInterval = 3600
    public static let lifetimeBounds: ClosedRange<TimeInterval> = 300...86_400
    /// A key set is fetched again for a token signed by a key it lacks (rotation): at once for
    /// a key id not asked about before, else at most this often. ID tokens come from the
    /// provider's own token endpoint, never from the browser, so only the provider can cause
    /// refetches, and a key it just rotated in must work at once.
    public static let refetchForUnknownKey: TimeInterval = 60
    /// Key ids remembered as asked about (a bound on the set below).
    static let rememberedUnknownKeys = 32
    /// Clock difference tolerated on `exp` and `iat`.
    public static let leeway: TimeInterval = 60
    /// An ID token issued longer ago than this is refused (a replayed old token).
    public static let maxTokenAge: TimeInterval = 10 * 60
    /// Longest ID token read; a longer one is refused before it is parsed.
    public static let maxTokenBytes = 16 * 1024
    /// The signatures accepted: RSA and ECDSA with SHA-2. Never `none`, never HMAC (whose
    /// key would be the client secret, known to the client).
    public static let acceptedAlgorithms: Set<String> = ["RS256", "RS384", "RS512", "ES256", "ES384", "ES512"]

    public let settings: Settings
    private let fetcher: BoundedHTTPFetcher
    private let now: @Sendable () -> Date
    private let lock = NSLock()
    private var cachedMetadata: (value: Metadata, until: Date)?
    private var cachedKeys: (keys: JWTKeyCollection, kids: Set<String>, until: Date, fetchedAt: Date)?
    /// Key ids a refetch was made for already.
    private var refetchedFor: Set<String> = []

    public init(settings: Settings, fetcher: BoundedHTTPFetcher, now: @escaping @Sendable () -> Date = Date.init) {
        self.settings = settings
        self.fetcher = fetcher
        self.now = now
    }

    // MARK: Discovery

    /// The discovery document, from the cache while it lasts. A provider that stops
    /// answering keeps being used from a stale copy for up to a day.
    public func metadata() throws(OpenIDError) -> Metadata {
        let moment = now()
        if let cached = lock.withLock({ cachedMetadata }), cached.until > moment { return cached.value }
        guard let url = URL(string: settings.issuer.trimmingSuffix("/") + "/.well-known/openid-configuration") else {
            throw .discovery("the issuer '\(settings.issuer)' makes no URL")
        }
        do {
            let (metadata, lifetime) = try fetcher.fetch(url) { answer -> (Metadata, TimeInterval)? in
                guard answer.status == 200, let metadata = Self.parseMetadata(answer.body,
                                                                              allowsHTTP: settings.issuer.hasPrefix("http://"))
                else { return nil }
                return (metadata, Self.lifetime(answer.maxAge))
            }
            guard metadata.issuer == settings.issuer else {
                throw OpenIDError.discovery("the document names the issuer '\(metadata.issuer)', not '\(settings.issuer)'")
            }
            let allowed = settings.endpointHosts.union([URL(string: settings.issuer)?.host?.lowercased() ?? ""])
            for (name, url) in [("token endpoint", metadata.tokenEndpoint), ("key set", metadata.jwksURI)]
                where !allowed.contains(url.host?.lowercased() ?? "") {
                throw OpenIDError.discovery("its \(name) is on '\(url.host ?? "")', not the issuer's host; list it in the provider's endpoint_hosts if that is right")
            }
            lock.withLock { cachedMetadata = (metadata, moment.addingTimeInterval(lifetime)) }
            return metadata
        } catch let failure as BoundedHTTPFetcher.Failure {
            if let stale = lock.withLock({ cachedMetadata }), moment.timeIntervalSince(stale.until) < Self.lifetimeBounds.upperBound {
                return stale.value
            }
            throw .unreachable(failure.reason == "garbage" ? "its discovery document is not one" : "discovery \(failure)")
        } catch let error as OpenIDError {
            throw error
        } catch {
            throw .discovery("\(error)")
        }
    }

    /// `allowsHTTP`: endpoints may be plain http (only for an http issuer, which the policy
    /// file allows on loopback alone); otherwise https, so the code and the secret never go
    /// in clear.
    package static func parseMetadata(_ body: Data, allowsHTTP: Bool) -> Metadata? {
        func webURL(_ text: String) -> URL? { Self.webURL(text, allowsHTTP: allowsHTTP) }
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let issuer = object["issuer"] as? String,
              let authorization = (object["authorization_endpoint"] as? String).flatMap(webURL),
              let token = (object["token_endpoint"] as? String).flatMap(webURL),
              let jwks = (object["jwks_uri"] as? String).flatMap(webURL) else { return nil }
        let methods = object["token_endpoint_auth_methods_supported"] as? [String]
        let secretInBody = methods.map { !$0.contains("client_secret_basic") && $0.contains("client_secret_post") } ?? false
        return Metadata(issuer: issuer, authorizationEndpoint: authorization, tokenEndpoint: token, jwksURI: jwks,
                        sendsSecretInBody: secretInBody,
                        signingAlgorithms: object["id_token_signing_alg_values_supported"] as? [String],
                        namesItselfInAnswers: object["authorization_response_iss_parameter_supported"] as? Bool ?? false)
    }

    private static func webURL(_ text: String, allowsHTTP: Bool) -> URL? {
        // A host that is there and not empty: "https://provider.example@/token" has a host of ""
        // to Foundation, and nothing good to connect to (found by fuzzing).
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || (allowsHTTP && scheme == "http"),
              url.host?.isEmpty == false else { return nil }
        return url
    }

    static func lifetime(_ maxAge: TimeInterval?) -> TimeInterval {
        min(max(maxAge ?? defaultLifetime, lifetimeBounds.lowerBound), lifetimeBounds.upperBound)
    }

    // MARK: The authorization request

    /// The URL the browser is sent to: code flow, PKCE S256, `state` and `nonce`.
    /// `redirectURI`: where the provider sends the browser back (registered with the provider).
    public func authorizationURL(redirectURI: URL, state: String, nonce: String, codeVerifier: String, uiLocales: String? = nil,
                                 prompt: String? = nil) throws(OpenIDError) -> URL {
        let metadata = try metadata()
        guard var components = URLComponents(url: metadata.authorizationEndpoint, resolvingAgainstBaseURL: false) else {
            throw .discovery("its authorization endpoint is not a URL")
        }
        var items = components.queryItems ?? []
        items += [
            URLQueryItem(name: "response_type", value: "code"),
            URLQueryItem(name: "client_id", value: settings.clientID),
            URLQueryItem(name: "redirect_uri", value: redirectURI.absoluteString),
            URLQueryItem(name: "scope", value: settings.scopes.joined(separator: " ")),
            URLQueryItem(name: "state", value: state),
            URLQueryItem(name: "nonce", value: nonce),
            URLQueryItem(name: "code_challenge", value: PKCE.challenge(for: codeVerifier)),
            URLQueryItem(name: "code_challenge_method", value: "S256"),
        ]
        if let uiLocales { items.append(URLQueryItem(name: "ui_locales", value: uiLocales)) }
        if let prompt { items.append(URLQueryItem(name: "prompt", value: prompt)) }
        components.queryItems = items
        guard let url = components.url else { throw .discovery("its authorization endpoint is not a URL") }
        return url
    }

    /// RFC 9207 §2.4: the `iss` of an authorization answer must be this issuer when given, and
    /// must be given when discovery says the provider gives it (an answer without it came from
    /// another provider: a mix-up).
    public func checkAnswerIssuer(_ iss: String?) throws(OpenIDError) {
        if let iss {
            guard iss == settings.issuer else { throw .wrongIssuer(String(iss.prefix(200))) }
            return
        }
        if try metadata().namesItselfInAnswers { throw .wrongIssuer("none, though the provider names itself in every answer") }
    }

    // MARK: The code's exchange

    /// Exchanges the code (with the PKCE verifier) for tokens; returns the ID token.
    public func exchange(code: String, codeVerifier: String, redirectURI: URL) throws(OpenIDError) -> String {
        let metadata = try metadata()
        var fields = [("grant_type", "authorization_code"), ("code", code),
                      ("redirect_uri", redirectURI.absoluteString), ("code_verifier", codeVerifier)]
        var headers = ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"]
        if metadata.sendsSecretInBody {
            fields += [("client_id", settings.clientID), ("client_secret", settings.clientSecret)]
        } else {
            // RFC 6749 §2.3.1: each part form-encoded before the Basic encoding.
            let credentials = Self.formEncode(settings.clientID) + ":" + Self.formEncode(settings.clientSecret)
            headers.append("Authorization: Basic " + Data(credentials.utf8).base64EncodedString())
            fields.append(("client_id", settings.clientID))
        }
        let body = Array(fields.map { Self.formEncode($0.0) + "=" + Self.formEncode($0.1) }.joined(separator: "&").utf8)
        enum Outcome { case token(String), refused(String), garbage }
        let outcome: Outcome
        do {
            outcome = try fetcher.fetch(metadata.tokenEndpoint, body: body, headers: headers) { answer -> Outcome? in
                let object = try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any]
                if answer.status == 200 {
                    guard let idToken = object?["id_token"] as? String else { return .garbage }
                    return .token(idToken)
                }
                // RFC 6749 §5.2: a 400 (or 401) with `error`.
                if let error = object?["error"] as? String { return .refused(String(error.prefix(100))) }
                return .refused("status \(answer.status)")
            }
        } catch {
            throw .unreachable("the token endpoint \(error)")
        }
        switch outcome {
        case .token(let token): return token
        case .refused(let error): throw .codeRefused(error)
        case .garbage: throw .unreachable("the token endpoint answered without an ID token")
        }
    }

    static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    // MARK: The ID token

    /// The ID token's claims once its signature (by a key of the provider's set), `iss`,
    /// `aud`, `azp`, `exp`, `iat` and `nonce` are all checked.
    public func verifyIDToken(_ token: String, nonce: String) throws(OpenIDError) -> IDTokenClaims {
        let metadata = try metadata()
        let kid = try Self.keyID(ofToken: token, metadata: metadata)
        var keys = try keySet(needing: kid, forceRefresh: false)
        if let kid, !keys.kids.contains(kid) {
            // A key the cached set lacks: the provider may have rotated. Fetch again, once a minute at most.
            keys = try keySet(needing: kid, forceRefresh: true)
        }
        return try Self.checkedClaims(token, keys: keys.keys, metadata: metadata, clientID: settings.clientID,
                                      nonce: nonce, now: now())
    }

    /// The id of the key a token says signed it, once its size and its algorithm (which the
    /// provider's discovery must list, when it lists any) are acceptable: refused before any
    /// key is fetched or used.
    package static func keyID(ofToken token: String, metadata: Metadata) throws(OpenIDError) -> String? {
        guard token.utf8.count <= Self.maxTokenBytes else { throw .malformedToken("longer than \(Self.maxTokenBytes) bytes") }
        let header = try Self.header(of: token)
        guard let algorithm = header["alg"] as? String, Self.acceptedAlgorithms.contains(algorithm),
              metadata.signingAlgorithms.map({ $0.contains(algorithm) }) ?? true else {
            throw .unsupportedAlgorithm((header["alg"] as? String) ?? "none given")
        }
        return header["kid"] as? String
    }

    /// The token's claims once its signature (jwt-kit, by one of `keys`), issuer, audience,
    /// authorized party, times, nonce and subject are checked: everything but the fetching,
    /// so the checks run the same on the server and under the fuzzer.
    package static func checkedClaims(_ token: String, keys collection: JWTKeyCollection, metadata: Metadata,
                                      clientID: String, nonce: String, now moment: Date) throws(OpenIDError) -> IDTokenClaims {
        let claims: IDTokenClaims
        do {
            claims = try Self.waitFor { try await collection.verify(token, as: IDTokenClaims.self, expectedAudience: clientID) }
        } catch let error as JWTError {
            switch error.errorType {
            case .claimVerificationFailure: throw .wrongAudience
            case .malformedToken, .invalidHeaderField, .invalidBool: throw .malformedToken(error.reason ?? "\(error.errorType)")
            default: throw .badSignature
            }
        } catch {
            throw .malformedToken("\(error)")
        }
        guard claims.iss.value == metadata.issuer else { throw .wrongIssuer(claims.iss.value) }
        // OIDC Core §3.1.3.7: several audiences need an authorized party, and it must be us.
        if claims.aud.value.count > 1 || claims.azp != nil {
            guard claims.azp == clientID else { throw .wrongAuthorizedParty }
        }
        guard claims.exp.value.addingTimeInterval(Self.leeway) > moment else { throw .expired }
        guard claims.iat.value <= moment.addingTimeInterval(Self.leeway),
              moment.timeIntervalSince(claims.iat.value) <= Self.maxTokenAge else { throw .issuedAtWrongTime }
        guard let said = claims.nonce, Self.constantTimeEqual(said, nonce) else { throw .nonceMismatch }
        guard !claims.sub.value.isEmpty, claims.sub.value.utf8.count <= 255 else { throw .malformedToken("its subject is empty or too long") }
        return claims
    }

    /// The token's JOSE header as JSON, read only to refuse an algorithm before any key is used.
    static func header(of token: String) throws(OpenIDError) -> [String: Any] {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Base64URL.decode(String(parts[0])),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw .malformedToken("not a signed JWT")
        }
        return object
    }

    private func keySet(needing kid: String?, forceRefresh: Bool) throws(OpenIDError) -> (keys: JWTKeyCollection, kids: Set<String>) {
        let moment = now()
        if let cached = lock.withLock({ cachedKeys }) {
            let fresh = cached.until > moment
            if fresh && !forceRefresh { return (cached.keys, cached.kids) }
            let mayRefetch = !forceRefresh || lock.withLock { () -> Bool in
                if moment.timeIntervalSince(cached.fetchedAt) >= Self.refetchForUnknownKey { return true }
                guard let kid, !refetchedFor.contains(kid) else { return false }
                if refetchedFor.count >= Self.rememberedUnknownKeys { refetchedFor.removeAll() }
                refetchedFor.insert(kid)
                return true
            }
            if !mayRefetch { return (cached.keys, cached.kids) }
        }
        let metadata = try metadata()
        do {
            let (jwks, kids, lifetime) = try fetcher.fetch(metadata.jwksURI) { answer -> (String, Set<String>, TimeInterval)? in
                guard answer.status == 200, let usable = Self.usableKeys(answer.body) else { return nil }
                return (usable.json, usable.kids, Self.lifetime(answer.maxAge))
            }
            let collection = JWTKeyCollection()
            do {
                _ = try Self.waitFor { try await collection.add(jwksJSON: jwks) }
            } catch {
                throw OpenIDError.unreachable("its key set is unusable: \(error)")
            }
            lock.withLock { cachedKeys = (collection, kids, moment.addingTimeInterval(lifetime), moment) }
            return (collection, kids)
        } catch let failure as BoundedHTTPFetcher.Failure {
            if let stale = lock.withLock({ cachedKeys }) { return (stale.keys, stale.kids) }
            throw .unreachable("its key set \(failure)")
        } catch let error as OpenIDError {
            throw error
        } catch {
            throw .unreachable("its key set: \(error)")
        }
    }

    /// The set's signing keys jwt-kit can use (RSA and EC, not marked for encryption), as
    /// a JWKS again, and their ids. Keys of other kinds are skipped, not fatal.
    package static func usableKeys(_ body: Data) -> (json: String, kids: Set<String>)? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let keys = object["keys"] as? [[String: Any]] else { return nil }
        let usable = keys.filter { key in
            let type = key["kty"] as? String
            return (type == "RSA" || type == "EC") && (key["use"] as? String ?? "sig") == "sig"
        }
        guard !usable.isEmpty, let data = try? JSONSerialization.data(withJSONObject: ["keys": usable]) else { return nil }
        return (String(decoding: data, as: UTF8.self), Set(usable.compactMap { $0["kid"] as? String }))
    }

    /// An async call's result, waited for on this (Dispatch) thread.
    package static func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let semaphore = DispatchSemaphore(value: 0)
        let outcome = Locked<Result<T, any Error>?>(nil)
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            semaphore.signal()
        }
        semaphore.wait()
        return try outcome.withLock { $0 }!.get()
    }

    public static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// Why a sign-in through a provider did not happen. `reason` is a short, stable label for
/// metrics and logs.
public enum OpenIDError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The provider cannot be asked (down, slow, garbage, paused).
    case unreachable(String)
    /// Its discovery document is wrong (another issuer, a missing endpoint).
    case discovery(String)
    /// The token endpoint refused the code (`invalid_grant`: used already, expired, wrong verifier).
    case codeRefused(String)
    case malformedToken(String)
    case unsupportedAlgorithm(String)
    case badSignature
    case wrongIssuer(String)
    case wrongAudience
    case wrongAuthorizedParty
    case expired
    case issuedAtWrongTime
    case nonceMismatch

    public var reason: String {
        switch self {
        case .unreachable: return "unreachable"
        case .discovery: return "discovery"
        case .codeRefused: return "code_refused"
        case .malformedToken: return "malformed_token"
        case .unsupportedAlgorithm: return "unsupported_algorithm"
        case .badSignature: return "bad_signature"
        case .wrongIssuer: return "wrong_issuer"
        case .wrongAudience: return "wrong_audience"
        case .wrongAuthorizedParty: return "wrong_azp"
        case .expired: return "expired"
        case .issuedAtWrongTime: return "wrong_iat"
        case .nonceMismatch: return "wrong_nonce"
        }
    }

    public var description: String {
        switch self {
        case .unreachable(let why): return "the provider cannot be asked: \(why)"
        case .discovery(let why): return "the provider's discovery document is wrong: \(why)"
        case .codeRefused(let error): return "the provider refused the code (\(error))"
        case .malformedToken(let why): return "the ID token is malformed: \(why)"
        case .unsupportedAlgorithm(let alg): return "the ID token is signed with \(alg), which is not accepted"
        case .badSignature: return "the ID token's signature is not by any of the provider's keys"
        case .wrongIssuer(let iss): return "the ID token names the issuer '\(iss)'"
        case .wrongAudience: return "the ID token was not issued for this site"
        case .wrongAuthorizedParty: return "the ID token's authorized party is not this site"
        case .expired: return "the ID token has expired"
        case .issuedAtWrongTime: return "the ID token was issued too long ago or in the future"
        case .nonceMismatch: return "the ID token's nonce is not this sign-in's"
        }
    }
}

/// The ID token's claims this site reads. Signature and audience are checked by jwt-kit;
/// time, issuer, authorized party and nonce by `OpenIDProvider.verifyIDToken` with its clock.
public struct IDTokenClaims: JWTIdentityToken, Sendable {
    public let iss: IssuerClaim
    public let sub: SubjectClaim
    public let aud: AudienceClaim
    public let exp: ExpirationClaim
    public let iat: IssuedAtClaim
    public let nonce: String?
    public let azp: String?
    public let email: String?
    /// Some providers send `"true"` as a string: BoolClaim reads both.
    public let email_verified: BoolClaim?
    public let preferred_username: String?
    public let name: String?

    public var audience: AudienceClaim { aud }
    public var emailVerified: Bool { email_verified?.value ?? false }

    /// Nothing here: the checks need the injected clock and the expected nonce, so
    /// `verifyIDToken` makes them after the signature.
    public func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// PKCE (RFC 7636) with S256, and the other random values of a sign-in.
public enum PKCE {
    /// 32 random bytes, base64url: 43 characters, within the RFC's 43 to 128.
    public static func makeVerifier() -> String { randomToken(bytes: 32) }

    public static func challenge(for verifier: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Data(verifier.utf8))))
    }

    /// A random, URL-safe value for `state` and `nonce`.
    public static func randomToken(bytes: Int = 24) -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}

enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}


extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
