import Clocks
import Crypto
import Foundation
import JWTKit
import MicroHTTPD
import OutsideHTTP
import XCTest
@testable import OpenIDConnect

/// The relying party's checks, each on its own, against a provider on loopback whose tokens
/// jwt-kit signs here and whose clock the test moves. (The browser suite runs the whole flow
/// against oidc-provider-mock, a provider we did not write.)
final class OpenIDProviderTests: XCTestCase {
    /// Found by fuzzing (Tests/Fuzz/corpus/openid-discovery/finding-empty-host-after-userinfo):
    /// an endpoint whose host is empty ("https://provider.example@/authorize") is no endpoint.
    func testADiscoveryDocumentWithAnEmptyHostIsRefused() {
        func document(authorization: String) -> Data {
            Data(#"{"issuer":"https://p.example","authorization_endpoint":"\#(authorization)","token_endpoint":"https://p.example/t","jwks_uri":"https://p.example/k"}"#.utf8)
        }
        XCTAssertNotNil(OpenIDProvider.parseMetadata(document(authorization: "https://p.example/a"), allowsHTTP: false))
        XCTAssertNil(OpenIDProvider.parseMetadata(document(authorization: "https://p.example@/a"), allowsHTTP: false))
        XCTAssertNil(OpenIDProvider.parseMetadata(document(authorization: "https:///a"), allowsHTTP: false))
    }

    private var provider: FakeProvider!
    private var server: HTTPServer!
    private var clock: TestClock!

    override func setUpWithError() throws {
        provider = FakeProvider()
        server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), responder: provider)
        try server.start()
        provider.issuer = "http://127.0.0.1:\(server.port)"
        clock = TestClock(start: Date(timeIntervalSince1970: 1_900_000_000))
    }

    override func tearDown() {
        _ = server.stop()
    }

    private func relyingParty(limits: BoundedHTTPFetcher.Limits = .init(maxBytes: 64 * 1024, deadline: 2, maxConcurrent: 4),
                              endpointHosts: Set<String> = []) -> OpenIDProvider {
        let clock = self.clock!
        return OpenIDProvider(settings: .init(issuer: provider.issuer, clientID: "our-client", clientSecret: "a-client-secret-32-bytes-or-longer/+:",
                                              scopes: ["email"], endpointHosts: endpointHosts),
                              fetcher: BoundedHTTPFetcher(limits: limits, now: { clock.now }), now: { clock.now })
    }

    private func claims(_ change: (inout [String: Claim]) -> Void = { _ in }) -> [String: Claim] {
        let now = Int(clock.now.timeIntervalSince1970)
        var claims: [String: Claim] = ["iss": .text(provider.issuer), "sub": .text("person-1"), "aud": .text("our-client"),
                                       "exp": .number(now + 300), "iat": .number(now), "nonce": .text("the-nonce"),
                                       "email": .text("p@example.org"), "email_verified": .flag(true)]
        change(&claims)
        return claims
    }

    func testAnHonestTokenIsAcceptedAndEachClaimIsChecked() throws {
        let party = relyingParty()
        let good = try party.verifyIDToken(provider.sign(claims()), nonce: "the-nonce")
        XCTAssertEqual(good.sub.value, "person-1")
        XCTAssertTrue(good.emailVerified)
        XCTAssertEqual(good.email, "p@example.org")
        // "true" as a string, as some providers send it.
        XCTAssertTrue(try party.verifyIDToken(provider.sign(claims { $0["email_verified"] = .text("true") }), nonce: "the-nonce").emailVerified)

        func refusal(_ claims: [String: Claim], nonce: String = "the-nonce") -> OpenIDError? {
            do {
                _ = try party.verifyIDToken(try provider.sign(claims), nonce: nonce)
                return nil
            } catch let error as OpenIDError {
                return error
            } catch {
                return .malformedToken("\(error)")
            }
        }
        let now = Int(clock.now.timeIntervalSince1970)
        XCTAssertEqual(refusal(claims(), nonce: "another-nonce"), .nonceMismatch)
        XCTAssertEqual(refusal(claims { $0["nonce"] = nil }), .nonceMismatch, "a token without a nonce")
        XCTAssertEqual(refusal(claims { $0["exp"] = .number(now - 61) }), .expired)
        XCTAssertNil(refusal(claims { $0["exp"] = .number(now - 30) }), "within the minute of leeway for clocks")
        XCTAssertEqual(refusal(claims { $0["iat"] = .number(now - 11 * 60) }), .issuedAtWrongTime, "too old to be this sign-in's")
        XCTAssertEqual(refusal(claims { $0["iat"] = .number(now + 120) }), .issuedAtWrongTime, "issued in the future")
        XCTAssertEqual(refusal(claims { $0["aud"] = .text("someone-else") }), .wrongAudience)
        XCTAssertEqual(refusal(claims { $0["aud"] = .list(["our-client", "someone-else"]) }), .wrongAudience,
                       "an audience nobody trusted besides ours")
        XCTAssertEqual(refusal(claims { $0["azp"] = .text("someone-else") }), .wrongAuthorizedParty)
        XCTAssertNil(refusal(claims { $0["azp"] = .text("our-client") }))
        XCTAssertEqual(refusal(claims { $0["iss"] = .text("https://impostor.example") }), .wrongIssuer("https://impostor.example"))
        clock.advance(by: 600)
        XCTAssertEqual(refusal(claims { $0["exp"] = .number(now + 300) }), .expired, "the same token ten minutes later")
    }

    func testNoneAndHMACAndAForgedSignatureAreRefused() throws {
        let party = relyingParty()
        let payload = Base64URL.encode(Array(try JSONEncoder().encode(claims())))
        let none = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + payload + "."
        XCTAssertThrowsError(try party.verifyIDToken(none, nonce: "the-nonce")) { error in
            XCTAssertEqual(error as? OpenIDError, .unsupportedAlgorithm("none"))
        }
        // HMAC with the client secret, which the client knows: never a provider's proof.
        let hmac = try provider.sign(claims(), hmacSecret: "a-client-secret-32-bytes-or-longer/+:")
        XCTAssertThrowsError(try party.verifyIDToken(hmac, nonce: "the-nonce")) { error in
            XCTAssertEqual(error as? OpenIDError, .unsupportedAlgorithm("HS256"))
        }
        let forged = try provider.sign(claims(), with: P256.Signing.PrivateKey(), kid: provider.kid)
        XCTAssertThrowsError(try party.verifyIDToken(forged, nonce: "the-nonce")) { error in
            XCTAssertEqual(error as? OpenIDError, .badSignature)
        }
        XCTAssertThrowsError(try party.verifyIDToken("not.a-token", nonce: "the-nonce")) { error in
            guard case .malformedToken = error as? OpenIDError else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try party.verifyIDToken(String(repeating: "a", count: 20_000), nonce: "the-nonce")) { error in
            guard case .malformedToken = error as? OpenIDError else { return XCTFail("\(error)") }
        }
    }

    func testKeysLiveAsLongAsTheirCacheControlSaysWithinBoundsAndARotationIsFollowed() throws {
        let party = relyingParty()
        provider.jwksMaxAge = 60   // below the floor: kept five minutes
        _ = try party.verifyIDToken(provider.sign(claims()), nonce: "the-nonce")
        _ = try party.verifyIDToken(provider.sign(claims()), nonce: "the-nonce")
        XCTAssertEqual(provider.requests("/jwks"), 1, "cached")
        XCTAssertEqual(provider.requests("/.well-known/openid-configuration"), 1)
        // The provider rotates: a token signed by a key the cached set lacks fetches it again, once.
        provider.rotate()
        _ = try party.verifyIDToken(provider.sign(claims()), nonce: "the-nonce")
        XCTAssertEqual(provider.requests("/jwks"), 2)
        let unknown = try provider.sign(claims(), with: P256.Signing.PrivateKey(), kid: "never-published")
        for _ in 0..<3 {
            XCTAssertThrowsError(try party.verifyIDToken(unknown, nonce: "the-nonce"))
        }
        XCTAssertEqual(provider.requests("/jwks"), 3, "an unknown key id refetches once, not per token")
        clock.advance(by: 299)
        _ = try party.verifyIDToken(provider.sign(claims()), nonce: "the-nonce")
        XCTAssertEqual(provider.requests("/jwks"), 3)
        clock.advance(by: 2)
        _ = try party.verifyIDToken(provider.sign(claims()), nonce: "the-nonce")
        XCTAssertEqual(provider.requests("/jwks"), 4, "five minutes, the floor, have passed")
    }

    func testDiscoveryMustNameTheIssuerAndADownProviderIsUnreachable() throws {
        provider.discoveredIssuer = "https://impostor.example"
        XCTAssertThrowsError(try relyingParty().metadata()) { error in
            guard case .discovery = error as? OpenIDError else { return XCTFail("\(error)") }
        }
        provider.discoveredIssuer = nil
        provider.garbage = true
        XCTAssertThrowsError(try relyingParty().metadata()) { error in
            guard case .unreachable = error as? OpenIDError else { return XCTFail("\(error)") }
        }
        provider.garbage = false
        let party = relyingParty()
        XCTAssertEqual(try party.metadata().tokenEndpoint.path, "/token")
        _ = server.stop()
        // Down after a good answer: the copy it had keeps working while it is fresh.
        XCTAssertEqual(try party.metadata().issuer, provider.issuer)
    }

    /// Issue 52, item 10: the token endpoint and the key set stay on the issuer's host unless
    /// the configuration allows another, so a discovery document cannot send the code and the
    /// client secret elsewhere.
    func testTheTokenEndpointStaysOnTheIssuersHostUnlessAllowed() throws {
        provider.tokenEndpoint = "https://collector.example/token"
        XCTAssertThrowsError(try relyingParty().metadata()) { error in
            guard case .discovery(let why) = error as? OpenIDError else { return XCTFail("\(error)") }
            XCTAssertTrue(why.contains("collector.example") && why.contains("endpoint_hosts"), why)
        }
        XCTAssertEqual(try relyingParty(endpointHosts: ["Collector.Example"]).metadata().tokenEndpoint.host, "collector.example",
                       "allowed by the configuration")
    }

    /// RFC 9207: an answer's `iss` must be the issuer when given, and must be given when the
    /// provider says it always names itself.
    func testTheAnswersIssuerIsCheckedAndRequiredWhereAdvertised() throws {
        XCTAssertNoThrow(try relyingParty().checkAnswerIssuer(nil), "not advertised: none is fine")
        XCTAssertNoThrow(try relyingParty().checkAnswerIssuer(provider.issuer))
        XCTAssertThrowsError(try relyingParty().checkAnswerIssuer("https://other.example")) { error in
            XCTAssertEqual(error as? OpenIDError, .wrongIssuer("https://other.example"))
        }
        provider.namesItselfInAnswers = true
        let party = relyingParty()
        XCTAssertThrowsError(try party.checkAnswerIssuer(nil), "advertised, so an answer without it is another's")
        XCTAssertNoThrow(try party.checkAnswerIssuer(provider.issuer))
    }

    func testTheAuthorizationRequestAndTheCodesExchangeCarryPKCE() throws {
        let party = relyingParty()
        let redirect = URL(string: "https://signup.example/signin/provider/callback")!
        let url = try party.authorizationURL(redirectURI: redirect, state: "st", nonce: "no", codeVerifier: "v" + String(repeating: "x", count: 42))
        let items = Dictionary(uniqueKeysWithValues: URLComponents(url: url, resolvingAgainstBaseURL: false)!.queryItems!.map {
            ($0.name, $0.value ?? "")
        })
        XCTAssertEqual(items["response_type"], "code")
        XCTAssertEqual(items["scope"], "openid email")
        XCTAssertEqual(items["code_challenge_method"], "S256")
        XCTAssertEqual(items["code_challenge"], PKCE.challenge(for: "v" + String(repeating: "x", count: 42)))
        XCTAssertEqual(items["redirect_uri"], redirect.absoluteString)

        provider.tokenAnswer = (200, #"{"id_token":"abc","token_type":"Bearer"}"#)
        XCTAssertEqual(try party.exchange(code: "the code", codeVerifier: "the-verifier", redirectURI: redirect), "abc")
        let sent = try XCTUnwrap(provider.lastTokenRequest)
        XCTAssertTrue(sent.body.contains("code_verifier=the-verifier"), sent.body)
        XCTAssertTrue(sent.body.contains("code=the%20code"), sent.body)
        XCTAssertTrue(sent.body.contains("grant_type=authorization_code"), sent.body)
        // RFC 6749 §2.3.1: each part form-encoded, then Basic.
        XCTAssertEqual(sent.authorization, "Basic " + Data("our-client:a-client-secret-32-bytes-or-longer%2F%2B%3A".utf8).base64EncodedString())

        provider.tokenAnswer = (400, #"{"error":"invalid_grant"}"#)
        XCTAssertThrowsError(try party.exchange(code: "used", codeVerifier: "v", redirectURI: redirect)) { error in
            XCTAssertEqual(error as? OpenIDError, .codeRefused("invalid_grant"))
        }
    }

    func testPKCEMatchesRFC7636sExample() {
        // RFC 7636, Appendix B.
        XCTAssertEqual(PKCE.challenge(for: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        XCTAssertEqual(PKCE.makeVerifier().count, 43)
        XCTAssertNotEqual(PKCE.randomToken(), PKCE.randomToken())
    }

    func testCacheControlLifetimes() {
        XCTAssertEqual(BoundedHTTPFetcher.maxAge("public, max-age=600"), 600)
        XCTAssertNil(BoundedHTTPFetcher.maxAge("no-store, max-age=600"))
        XCTAssertNil(BoundedHTTPFetcher.maxAge(""))
        XCTAssertEqual(OpenIDProvider.lifetime(nil), 3600)
        XCTAssertEqual(OpenIDProvider.lifetime(10), 300)
        XCTAssertEqual(OpenIDProvider.lifetime(10_000_000), 86_400)
    }
}

/// A provider on loopback: discovery, an ES256 key set (jwt-kit signs its tokens) and a
/// token endpoint whose answer the test sets; it counts what it was asked.
final class FakeProvider: HTTPResponder, @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]
    private var key = P256.Signing.PrivateKey()
    private(set) var kid = "key-1"
    var issuer = ""
    var discoveredIssuer: String?
    /// Where discovery says the token endpoint is (its own host when nil).
    var tokenEndpoint: String?
    /// Whether discovery says its answers carry `iss` (RFC 9207).
    var namesItselfInAnswers = false
    var garbage = false
    var jwksMaxAge = 3600
    var tokenAnswer: (Int, String) = (200, "{}")
    var lastTokenRequest: (body: String, authorization: String)?

    func requests(_ path: String) -> Int { lock.withLock { counts[path] ?? 0 } }

    func rotate() {
        lock.withLock {
            key = P256.Signing.PrivateKey()
            kid = "key-\(counts.count + 2)"
        }
    }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        lock.withLock { counts[request.path, default: 0] += 1 }
        switch request.path {
        case "/.well-known/openid-configuration":
            if garbage { return .json("<html>not a document</html>") }
            return .json("""
                {"issuer":"\(discoveredIssuer ?? issuer)","authorization_endpoint":"\(issuer)/authorize",
                 "token_endpoint":"\(tokenEndpoint ?? issuer + "/token")","jwks_uri":"\(issuer)/jwks",
                 "authorization_response_iss_parameter_supported":\(namesItselfInAnswers),
                 "id_token_signing_alg_values_supported":["ES256","RS256"]}
                """)
        case "/jwks":
            let (key, kid) = lock.withLock { (self.key, self.kid) }
            let raw = key.publicKey.rawRepresentation
            var response = HTTPResponse.json("""
                {"keys":[{"kty":"EC","crv":"P-256","use":"sig","alg":"ES256","kid":"\(kid)",
                 "x":"\(Base64URL.encode(Array(raw.prefix(32))))","y":"\(Base64URL.encode(Array(raw.suffix(32))))"}]}
                """)
            response.headers.add("Cache-Control", "public, max-age=\(jwksMaxAge)")
            return response
        case "/token":
            lock.withLock {
                lastTokenRequest = (String(decoding: request.body, as: UTF8.self), request.headers["Authorization"] ?? "")
            }
            let (status, body) = tokenAnswer
            return .json(body, status: status == 200 ? .ok : .badRequest)
        default:
            return .json("{}", status: .notFound)
        }
    }

    /// `claims` signed by the published key (or `key`, under `kid`), or with HMAC.
    func sign(_ claims: [String: Claim], with key: P256.Signing.PrivateKey? = nil, kid: String? = nil,
              hmacSecret: String? = nil) throws -> String {
        let (published, publishedKid) = lock.withLock { (self.key, self.kid) }
        let collection = JWTKeyCollection()
        let payload = RawClaims(claims: claims)
        return try OpenIDProvider.waitFor {
            if let hmacSecret {
                await collection.add(hmac: HMACKey(from: hmacSecret), digestAlgorithm: .sha256, kid: "h")
                return try await collection.sign(payload, kid: "h")
            }
            let signer = try ES256PrivateKey(backing: key ?? published)
            await collection.add(ecdsa: signer, kid: JWKIdentifier(string: kid ?? publishedKid))
            return try await collection.sign(payload, kid: JWKIdentifier(string: kid ?? publishedKid))
        }
    }
}

/// One claim's value, of the kinds ID tokens carry.
enum Claim: Encodable, Sendable {
    case text(String)
    case number(Int)
    case flag(Bool)
    case list([String])

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .text(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .flag(let value): try container.encode(value)
        case .list(let value): try container.encode(value)
        }
    }
}

/// Any claims as a JWT payload, so tests can send tokens of any shape.
struct RawClaims: JWTPayload {
    let claims: [String: Claim]
    init(claims: [String: Claim]) { self.claims = claims }
    init(from decoder: any Decoder) throws { claims = [:] }
    func encode(to encoder: any Encoder) throws { try claims.encode(to: encoder) }
    func verify(using algorithm: some JWTAlgorithm) throws {}
}
