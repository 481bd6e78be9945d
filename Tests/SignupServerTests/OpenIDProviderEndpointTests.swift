import Clocks
import Foundation
import HTTPTestSupport
import LiveSignupClient
import OpenIDConnect
import WebKernel
import Locking
import SignupDomain
@testable import Identity
@testable import SignupServer
import XCTest

/// Issue 56: LiveSignup as the OpenID provider of the operator's applications. Authlib's
/// client (with joserfc checking the ID token against the published keys) signs a person in
/// with code + PKCE, reads userinfo, rotates and reuses refresh tokens, introspects and
/// revokes; every refusal is checked for what it says, what it stored (nothing), and that a
/// control person's grant at the same application went on working.
final class OpenIDProviderEndpointTests: XCTestCase {
    private var server: TestServer!
    private var clock: TestClock!
    private let secret = "wiki-secret-0123456789-abcdefghijklmnop"
    private let redirect = "http://127.0.0.1:9/callback"

    override func setUpWithError() throws {
        // A little in the past: joserfc refuses a token issued in the future, and the test moves
        // this clock on (a key rotation) faster than real time passes.
        clock = TestClock(start: Date().addingTimeInterval(-30))
        server = try TestServer { [clock, secret, redirect] configuration in
            configuration.clock = clock!
            var policy = Policy.classic
            var wiki = ClientDeclaration(id: "wiki", name: "The Wiki", redirectURIs: [redirect])
            wiki.firstParty = true
            wiki.secretVariable = "WIKI_SECRET"
            var phone = ClientDeclaration(id: "phone-app", name: "The Phone App", redirectURIs: [redirect])
            phone.firstParty = true
            var blog = ClientDeclaration(id: "blog", name: "Someone's Blog", redirectURIs: [redirect])
            blog.secretVariable = "BLOG_SECRET"
            blog.scopes = ["openid", "profile", "email"]
            var legacy = ClientDeclaration(id: "legacy", name: "An Old Application", redirectURIs: [redirect])
            legacy.firstParty = true
            legacy.secretVariable = "LEGACY_SECRET"
            legacy.idTokenAlgorithm = "RS256"
            policy.clients = [wiki, phone, blog, legacy]
            configuration.policy = FormPolicy(policy)
            configuration.clientSecrets = ["wiki": secret, "blog": secret, "legacy": secret]
        }
    }

    override func tearDown() {
        server.stop()
    }

    // MARK: The person's side, as far as these tests need it

    /// An account with a proved address, made the store's way.

    private var issuer: String { server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")) }

    // MARK: Code we did not write: Authlib's client and joserfc

    func testAuthlibsClientSignsInReadsRefreshesIntrospectsAndRevokes() async throws {
        try Prerequisite.python(module: "authlib")
        try Prerequisite.python(module: "joserfc")
        let person = try server.provedAccount("Grace", at: clock.now)
        let cookie = try await server.signedInCookie("Grace")
        let seen = try runClient(clientID: "wiki", secret: secret, cookie: cookie)

        XCTAssertEqual(seen["discovery_issuer"] as? String, issuer)
        for trip in try XCTUnwrap(seen["authorize"] as? [[String: Any]]) {
            XCTAssertEqual(trip["status"] as? Int, 303)
            XCTAssertEqual(trip["to_redirect_uri"] as? Bool, true)
            XCTAssertEqual(trip["iss"] as? String, issuer, "RFC 9207: the answer names its provider")
            XCTAssertEqual(trip["state_kept"] as? Bool, true)
        }
        let idToken = try XCTUnwrap(seen["id_token"] as? [String: Any])
        XCTAssertEqual(idToken["alg"] as? String, "ES256")
        let claims = try XCTUnwrap(idToken["claims"] as? [String: Any])
        let subject = try XCTUnwrap(claims["sub"] as? String)
        XCTAssertEqual(subject, server.app.services.openID.server.subject(of: person.id))
        XCTAssertFalse(subject.contains("grace") || subject == String(person.id), "sub is neither the address nor the number")
        XCTAssertEqual(claims["email"] as? String, "grace@example.org")
        XCTAssertEqual(claims["email_verified"] as? Bool, true)
        XCTAssertEqual(claims["preferred_username"] as? String, "Grace")
        XCTAssertEqual(claims["amr"] as? [String], ["pwd"])
        XCTAssertEqual(claims["acr"] as? String, "1")
        XCTAssertNotNil(claims["sid"] as? String)
        XCTAssertNotNil(claims["auth_time"] as? Int)
        XCTAssertEqual(seen["token_type"] as? String, "Bearer")
        let userinfo = try XCTUnwrap(seen["userinfo"] as? [String: Any])
        XCTAssertEqual(userinfo["sub"] as? String, subject)
        XCTAssertEqual(userinfo["email"] as? String, "grace@example.org")

        XCTAssertEqual(seen["rotated"] as? Bool, true, "a refresh gives a new pair")
        XCTAssertEqual(seen["rotated_id_token_sub"] as? String, subject)
        let reuse = try XCTUnwrap(seen["reused_refresh"] as? [String: Any])
        XCTAssertEqual(reuse["status"] as? Int, 400)
        XCTAssertEqual(reuse["error"] as? String, "invalid_grant")
        XCTAssertEqual(seen["family_revoked"] as? Bool, true, "the reused token's family is revoked, the rotated pair with it")

        let introspected = try XCTUnwrap(seen["introspected"] as? [String: Any])
        XCTAssertEqual(introspected["active"] as? Bool, true)
        XCTAssertEqual(introspected["client_id"] as? String, "wiki")
        XCTAssertEqual(introspected["sub"] as? String, subject)
        XCTAssertEqual(seen["revoke_status"] as? Int, 200)
        XCTAssertEqual(seen["revoked_access_refused"] as? Int, 401)
        XCTAssertEqual((seen["introspected_after"] as? [String: Any])?["active"] as? Bool, false)

        // A key rotation, followed by the client with the server running: the next key signs
        // (published at once, signing at once here) and the client verifies it from the set.
        let before = try XCTUnwrap(idToken["kid"] as? String)
        // A second on: keys are made at whole seconds, and the newer must sign from later.
        clock.advance(by: 1)
        let rotated = try server.app.services.openID.signingKeys.rotate(publishLead: 0)
        XCTAssertEqual(rotated.map(\.algorithm).sorted(), ["ES256", "RS256"], "every algorithm in use rotates")
        let next = try XCTUnwrap(rotated.first { $0.algorithm == "ES256" })
        let after = try runClient(clientID: "wiki", secret: secret, cookie: cookie)
        let kid = try XCTUnwrap((after["id_token"] as? [String: Any])?["kid"] as? String)
        XCTAssertNotEqual(kid, before)
        XCTAssertEqual(kid, next.id, "the rotated key signs, and joserfc found it in the published set")
    }

    func testAPublicClientSignsInWithPKCEAlone() async throws {
        try Prerequisite.python(module: "authlib")
        try server.provedAccount("Ada", at: clock.now)
        let seen = try runClient(clientID: "phone-app", secret: "", cookie: try await server.signedInCookie("Ada"))
        XCTAssertEqual((seen["id_token"] as? [String: Any]).flatMap { ($0["claims"] as? [String: Any])?["aud"] as? String }, "phone-app")
        XCTAssertEqual(seen["family_revoked"] as? Bool, true)
        XCTAssertEqual(seen["revoked_access_refused"] as? Int, 401)
    }

    // MARK: Refused readably, storing nothing, disturbing no one else

    private let verifier = "a-verifier-of-forty-three-or-more-characters-0123"

    /// The query of an authorization request from the wiki (PKCE with `verifier`).
    private func authorizeQuery(_ extra: [(String, String)] = [], client: String = "wiki", redirect: String? = nil) -> String {
        let pairs = [("response_type", "code"), ("client_id", client), ("redirect_uri", redirect ?? self.redirect),
                     ("scope", "openid email profile"), ("state", "the-state"), ("nonce", "the-nonce"),
                     ("code_challenge", PKCE.challenge(for: verifier)), ("code_challenge_method", "S256")] + extra
        return FormURLEncoder.encode(pairs)
    }

    /// The code the wiki receives for the browser signed in with `cookie`.
    private func code(cookie: String, _ extra: [(String, String)] = []) async throws -> String {
        let answer = try await server.request("GET", "/oauth2/authorize?" + authorizeQuery(extra), headers: ["Cookie": cookie])
        XCTAssertEqual(answer.status, 303, answer.body)
        let location = try XCTUnwrap(answer.headers["location"])
        XCTAssertTrue(location.hasPrefix(redirect + "?"), location)
        return try XCTUnwrap(URLComponents(string: location)?.queryItems?.first { $0.name == "code" }?.value)
    }

    private func redeem(_ code: String, verifier: String? = nil, secret: String? = nil, redirect: String? = nil)
        async throws -> (status: Int, json: [String: Any]) {
        let credentials = Data("wiki:\(secret ?? self.secret)".utf8).base64EncodedString()
        let answer = try await server.request("POST", "/oauth2/token", body: FormURLEncoder.encode([
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect ?? self.redirect),
            ("code_verifier", verifier ?? self.verifier),
        ]), headers: ["Authorization": "Basic \(credentials)"])
        XCTAssertEqual(answer.headers["cache-control"], "no-store")
        return (answer.status, try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]))
    }

    private func userinfo(_ token: Any?) async throws -> Int {
        try await server.request("GET", "/oauth2/userinfo", headers: ["Authorization": "Bearer \(token as? String ?? "none")"]).status
    }

    func testCodesAreSpentOnceAndEveryWrongRedemptionIsRefusedWithoutTouchingAnotherGrant() async throws {
        try server.provedAccount("Grace", at: clock.now)
        try server.provedAccount("Control", at: clock.now)
        let cookie = try await server.signedInCookie("Grace")
        // A control person's grant at the same application, which nothing below may disturb.
        let control = try await redeem(try await code(cookie: try await server.signedInCookie("Control")))
        XCTAssertEqual(control.status, 200, "\(control.json)")

        // A reused code: refused, and what its first use issued is revoked.
        let code = try await self.code(cookie: cookie)
        let first = try await redeem(code)
        XCTAssertEqual(first.status, 200, "\(first.json)")
        let again = try await redeem(code)
        XCTAssertEqual(again.status, 400)
        XCTAssertEqual(again.json["error"] as? String, "invalid_grant")
        XCTAssertEqual(again.json["error_description"] as? String, "the code was used before; what it issued is revoked")
        let firstAfter = try await userinfo(first.json["access_token"])
        XCTAssertEqual(firstAfter, 401, "the first use's access token is revoked")

        // A wrong verifier: refused, and the code cannot be tried again with the right one.
        let guarded = try await self.code(cookie: cookie)
        let wrong = try await redeem(guarded, verifier: String(repeating: "x", count: 43))
        XCTAssertEqual(wrong.json["error"] as? String, "invalid_grant")
        XCTAssertEqual(wrong.json["error_description"] as? String, "code_verifier does not match the code_challenge")
        let retried = try await redeem(guarded)
        XCTAssertEqual(retried.json["error"] as? String, "invalid_grant")

        // Another redirect URI than the code was sent to.
        let moved = try await redeem(try await self.code(cookie: cookie), redirect: "http://127.0.0.1:9/elsewhere")
        XCTAssertEqual(moved.json["error_description"] as? String, "redirect_uri differs from the authorization request's")

        // A wrong secret: 401 before the code is looked at; the code still works afterwards.
        let kept = try await self.code(cookie: cookie)
        let impostor = try await redeem(kept, secret: "not-the-secret")
        XCTAssertEqual(impostor.status, 401)
        XCTAssertEqual(impostor.json["error"] as? String, "invalid_client")
        let honest = try await redeem(kept)
        XCTAssertEqual(honest.status, 200)

        // An expired code (a minute).
        let late = try await self.code(cookie: cookie)
        clock.advance(by: 61)
        let expired = try await redeem(late)
        XCTAssertEqual(expired.json["error_description"] as? String, "the code is unknown or expired")

        let controlAfter = try await userinfo(control.json["access_token"])
        XCTAssertEqual(controlAfter, 200, "the control's access token still works")
        let refreshed = try await server.request("POST", "/oauth2/token", body: FormURLEncoder.encode([
            ("grant_type", "refresh_token"), ("refresh_token", control.json["refresh_token"] as? String ?? ""),
            ("client_id", "wiki"), ("client_secret", secret),
        ]))
        XCTAssertEqual(refreshed.status, 200, "the control's grant lives on: \(refreshed.body)")
    }

    func testAnUntrustedRequestIsAPageNeverARedirect() async throws {
        try server.provedAccount("Grace", at: clock.now)
        let cookie = try await server.signedInCookie("Grace")
        let unregistered = try await server.request("GET", "/oauth2/authorize?" + authorizeQuery(redirect: "https://evil.example/cb"),
                                                    headers: ["Cookie": cookie, "Accept": "text/html"])
        XCTAssertEqual(unregistered.status, 400)
        XCTAssertNil(unregistered.headers["location"], "never redirected to an unregistered URI")
        XCTAssertTrue(unregistered.body.contains("has not registered"), unregistered.body)
        XCTAssertFalse(unregistered.body.contains("evil.example"), "the URI is not even shown as a link")

        let unknown = try await server.request("GET", "/oauth2/authorize?" + authorizeQuery(client: "nobody"),
                                               headers: ["Cookie": cookie])
        XCTAssertEqual(unknown.status, 400)
        XCTAssertNil(unknown.headers["location"])
        XCTAssertTrue(unknown.body.contains("not one this site knows"), unknown.body)

        let huge = try await server.request("GET", "/oauth2/authorize?" + authorizeQuery([("state", String(repeating: "s", count: 5000))]),
                                            headers: ["Cookie": cookie])
        XCTAssertEqual(huge.status, 400)
        XCTAssertNil(huge.headers["location"])
        XCTAssertEqual(try server.store.consents(ofAccount: try XCTUnwrap(try server.store.account(named: "Grace")).id, at: clock.now), [],
                       "nothing granted")
    }

    func testTheApplicationIsToldWhatWentWrongAtItsOwnRedirect() async throws {
        // prompt=none with nobody signed in: login_required, to the application.
        let silent = try await server.request("GET", "/oauth2/authorize?" + authorizeQuery([("prompt", "none")]))
        XCTAssertEqual(silent.status, 303)
        let location = try XCTUnwrap(silent.headers["location"])
        let items = try XCTUnwrap(URLComponents(string: location)?.queryItems)
        XCTAssertTrue(location.hasPrefix(redirect + "?"), location)
        XCTAssertEqual(items.first { $0.name == "error" }?.value, "login_required")
        XCTAssertEqual(items.first { $0.name == "state" }?.value, "the-state")
        XCTAssertEqual(items.first { $0.name == "iss" }?.value, issuer)

        // A public client without PKCE.
        let bare = try await server.request("GET", "/oauth2/authorize?" + FormURLEncoder.encode([
            ("response_type", "code"), ("client_id", "phone-app"), ("redirect_uri", redirect), ("scope", "openid"),
        ]))
        XCTAssertEqual(URLComponents(string: bare.headers["location"] ?? "")?.queryItems?.first { $0.name == "error" }?.value,
                       "invalid_request")
        // Not signed in: to LiveSignup's sign-in, in the application's language, and back.
        let signIn = try await server.request("GET", "/oauth2/authorize?" + authorizeQuery([("ui_locales", "fr-CA de"),
                                                                                            ("login_hint", "Grace")]))
        let to = try XCTUnwrap(signIn.headers["location"])
        XCTAssertTrue(to.hasPrefix("/signin?lang=fr&login_hint=Grace&return_to=%2Foauth2%2Fauthorize%3F"), to)
        // prompt=create: the live sign-up form instead.
        let create = try await server.request("GET", "/oauth2/authorize?" + authorizeQuery([("prompt", "create")]))
        XCTAssertTrue(create.headers["location"]?.hasPrefix("/?lang=en&return_to=") == true, create.headers["location"] ?? "")
        let page = try await server.request("GET", try XCTUnwrap(create.headers["location"]))
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.body.contains("name=\"return_to\" value=\"/oauth2/authorize?"), "the form carries the way back")
    }

    /// `prompt=login` and `max_age` send a signed-in person to sign in again, and back to a
    /// request without them (else it would ask forever); `prompt=consent` stays.
    func testASignInAgainComesBackWithoutWhatItDid() async throws {
        try server.provedAccount("Grace", at: clock.now)
        let cookie = try await server.signedInCookie("Grace")
        let login = try await server.request("GET", "/oauth2/authorize?" + authorizeQuery([("prompt", "login consent")]),
                                             headers: ["Cookie": cookie])
        let to = try XCTUnwrap(login.headers["location"])
        XCTAssertTrue(to.hasPrefix("/signin?lang=en&return_to="), to)
        let back = try XCTUnwrap(to.components(separatedBy: "return_to=").last?.removingPercentEncoding)
        XCTAssertTrue(back.contains("prompt=consent") && !back.contains("login"), back)
        clock.advance(by: 120)
        let old = try await server.request("GET", "/oauth2/authorize?" + authorizeQuery([("max_age", "60")]), headers: ["Cookie": cookie])
        let again = try XCTUnwrap(old.headers["location"])
        XCTAssertTrue(again.hasPrefix("/signin?"), "signed in longer ago than max_age: \(again)")
        XCTAssertFalse(again.removingPercentEncoding?.contains("max_age") ?? true, again)
        let fresh = try await server.request("GET", "/oauth2/authorize?" + authorizeQuery([("max_age", "600")]), headers: ["Cookie": cookie])
        XCTAssertTrue(fresh.headers["location"]?.hasPrefix(redirect + "?code=") == true, "recent enough: a code")
    }

    // MARK: Consent, remembered and withdrawn

    func testAnotherPartysApplicationAsksOnceRemembersAndIsWithdrawnOnTheAccountPage() async throws {
        try server.provedAccount("Grace", at: clock.now)
        try server.provedAccount("Control", at: clock.now)
        let cookie = try await server.signedInCookie("Grace"), control = try await server.signedInCookie("Control")
        let query = authorizeQuery(client: "blog")
        func location(_ answer: (status: Int, headers: [String: String], body: String)) -> URLComponents? {
            answer.headers["location"].flatMap(URLComponents.init(string:))
        }
        // Asked for nothing yet, silently: consent_required, to the application.
        let silent = try await server.request("GET", "/oauth2/authorize?" + query + "&prompt=none", headers: ["Cookie": cookie])
        XCTAssertEqual(location(silent)?.queryItems?.first { $0.name == "error" }?.value, "consent_required")

        // The page says who asks and what it learns, in the person's language.
        let page = try await server.request("GET", "/oauth2/authorize?" + query, headers: ["Cookie": cookie])
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.body.contains("Allow <bdi>Someone&#39;s Blog</bdi> to sign you in?"), page.body)
        for scope in ["openid", "email", "profile"] { XCTAssertTrue(page.body.contains("data-scope=\"\(scope)\""), scope) }
        let request = try XCTUnwrap(page.body.firstMatch(of: #/name="request" value="([^"]+)"/#).map { String($0.1) })
            .replacingOccurrences(of: "&amp;", with: "&")
        let german = try await server.request("GET", "/oauth2/authorize?" + query + "&ui_locales=de", headers: ["Cookie": cookie])
        XCTAssertTrue(german.body.contains("lang=\"de\""), "ui_locales chooses the page's language")

        // Cancelled: access_denied, and nothing remembered.
        let denied = try await server.request("POST", "/oauth2/consent", body: FormURLEncoder.encode([
            ("request", request), ("decision", "deny")]), headers: ["Cookie": cookie])
        XCTAssertEqual(location(denied)?.queryItems?.first { $0.name == "error" }?.value, "access_denied")
        let grace = try XCTUnwrap(try server.store.account(named: "Grace"))
        XCTAssertNil(try server.store.consent(ofAccount: grace.id, client: "blog"))

        // Allowed: a code, and the next sign-in goes straight through.
        let allowed = try await server.request("POST", "/oauth2/consent", body: FormURLEncoder.encode([
            ("request", request), ("decision", "allow")]), headers: ["Cookie": cookie])
        let code = try XCTUnwrap(location(allowed)?.queryItems?.first { $0.name == "code" }?.value, allowed.body)
        let credentials = Data("blog:\(secret)".utf8).base64EncodedString()
        let tokens = try await server.request("POST", "/oauth2/token", body: FormURLEncoder.encode([
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect), ("code_verifier", verifier),
        ]), headers: ["Authorization": "Basic \(credentials)"])
        XCTAssertEqual(tokens.status, 200, tokens.body)
        let access = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(tokens.body.utf8)) as? [String: Any])?["access_token"])
        let again = try await server.request("GET", "/oauth2/authorize?" + query, headers: ["Cookie": cookie])
        XCTAssertNotNil(location(again)?.queryItems?.first { $0.name == "code" }, "remembered")
        let asked = try await server.request("GET", "/oauth2/authorize?" + query + "&prompt=consent", headers: ["Cookie": cookie])
        XCTAssertEqual(asked.status, 200, "prompt=consent asks again")

        // The control person allows it too; withdrawing Grace's leaves theirs alone.
        let controlPage = try await server.request("GET", "/oauth2/authorize?" + query, headers: ["Cookie": control])
        let controlRequest = try XCTUnwrap(controlPage.body.firstMatch(of: #/name="request" value="([^"]+)"/#).map { String($0.1) })
            .replacingOccurrences(of: "&amp;", with: "&")
        _ = try await server.request("POST", "/oauth2/consent", body: FormURLEncoder.encode([
            ("request", controlRequest), ("decision", "allow")]), headers: ["Cookie": control])

        let listed = try await server.request("GET", "/account", headers: ["Cookie": cookie])
        XCTAssertTrue(listed.body.contains("data-application=\"blog\""), listed.body)
        XCTAssertTrue(listed.body.contains("data-application=\"wiki\"") == false, "only what it allowed or holds")
        let withdrawn = try await server.request("POST", "/account/applications/revoke", body: FormURLEncoder.encode([
            ("client", "blog")]), headers: ["Cookie": cookie])
        XCTAssertEqual(withdrawn.status, 303)
        XCTAssertEqual(withdrawn.headers["location"], "/account?application=revoked&client=blog#applications")
        let after = try await server.request("GET", "/account?application=revoked&client=blog", headers: ["Cookie": cookie])
        XCTAssertTrue(after.body.contains("can no longer sign you in"), after.body)
        XCTAssertFalse(after.body.contains("data-application=\"blog\""))
        let stopped = try await userinfo(access)
        XCTAssertEqual(stopped, 401, "its tokens stop at once")
        XCTAssertNil(try server.store.consent(ofAccount: grace.id, client: "blog"))
        let controlAccount = try XCTUnwrap(try server.store.account(named: "Control"))
        XCTAssertNotNil(try server.store.consent(ofAccount: controlAccount.id, client: "blog"), "the control's consent stays")
    }

    /// RFC 6749 §2.3.1 form-encodes the Basic header's halves; many clients do not. Either
    /// reading of a secret counts, a wrong one never, and a public client sends none.
    func testClientsProveThemselvesWithBasicEitherEncodedOrNotAndPublicOnesWithout() throws {
        let authority = server.app.services.openID.server
        func basic(_ text: String) -> String { "Basic " + Data(text.utf8).base64EncodedString() }
        XCTAssertEqual(try authority.authenticate(authorization: basic("wiki:\(secret)"), form: { _ in nil }).id, "wiki")
        let encoded = secret.replacingOccurrences(of: "-", with: "%2D")
        XCTAssertEqual(try authority.authenticate(authorization: basic("wiki:\(encoded)"), form: { _ in nil }).id, "wiki")
        XCTAssertEqual(try authority.authenticate(authorization: nil, form: { ["client_id": "wiki", "client_secret": self.secret][$0] }).id,
                       "wiki")
        for (header, form, expected) in [
            (basic("wiki:nope"), [String: String](), "wrong client secret"),
            (nil, ["client_id": "wiki"], "the client secret is missing"),
            (basic("nobody:\(secret)"), [:], "unknown client"),
            (basic("phone-app:something"), [:], "a public client has no secret"),
            ("Basic not-base64!", [:], "the Authorization header is not Basic client_id:client_secret"),
        ] as [(String?, [String: String], String)] {
            XCTAssertThrowsError(try authority.authenticate(authorization: header, form: { form[$0] })) { error in
                XCTAssertEqual((error as? AuthorizationServer.TokenError)?.description, expected)
                XCTAssertEqual((error as? AuthorizationServer.TokenError)?.status, 401)
            }
        }
        XCTAssertEqual(try authority.authenticate(authorization: basic("phone-app:"), form: { _ in nil }).id, "phone-app")
        XCTAssertThrowsError(try authority.authenticate(authorization: basic("wiki:\(secret)"),
                                                        form: { ["client_secret": self.secret][$0] })) { error in
            XCTAssertEqual((error as? AuthorizationServer.TokenError)?.code, "invalid_request", "one way at a time")
        }
    }

    /// Each application has its own allowance, across instances, spent only once it has
    /// proved itself: a stranger naming it (a wrong secret) spends none of it.
    func testAnApplicationsOwnAllowanceIsSpentOnlyByItself() async throws {
        let limited = try TestServer { [clock, secret, redirect] configuration in
            configuration.clock = clock!
            var policy = Policy.classic
            var wiki = ClientDeclaration(id: "wiki", name: "The Wiki", redirectURIs: [redirect])
            wiki.firstParty = true
            wiki.secretVariable = "WIKI_SECRET"
            policy.clients = [wiki]
            configuration.policy = FormPolicy(policy)
            configuration.clientSecrets = ["wiki": secret]
            configuration.limits.tokenRequestsPerClient = Rate(burst: 2, perSecond: 1.0 / 3600)
        }
        defer { limited.stop() }
        func revoke(secret: String) async throws -> (status: Int, headers: [String: String], body: String) {
            try await limited.request("POST", "/oauth2/revoke", body: FormURLEncoder.encode([
                ("token", "anything"), ("client_id", "wiki"), ("client_secret", secret)]))
        }
        for _ in 0..<5 {
            let stranger = try await revoke(secret: "not-the-secret-at-all")
            XCTAssertEqual(stranger.status, 401)
        }
        for _ in 0..<2 {
            let own = try await revoke(secret: secret)
            XCTAssertEqual(own.status, 200, "the strangers spent none of it")
        }
        let over = try await revoke(secret: secret)
        XCTAssertEqual(over.status, 429, over.body)
        XCTAssertTrue(over.body.contains("\"limit\":\"tokens\""), over.body)
        XCTAssertNotNil(over.headers["retry-after"])
    }

    /// An application that can only verify RS256 registers so, and its ID tokens are RS256,
    /// verified by joserfc against the same published set (which now holds an RSA key too).
    func testAnApplicationThatNeedsRS256GetsRS256() async throws {
        try Prerequisite.python(module: "authlib")
        try server.provedAccount("Ada", at: clock.now)
        let seen = try runClient(clientID: "legacy", secret: secret, cookie: try await server.signedInCookie("Ada"), algorithm: "RS256")
        XCTAssertEqual((seen["id_token"] as? [String: Any])?["alg"] as? String, "RS256")
        XCTAssertEqual(seen["family_revoked"] as? Bool, true)
        let discovery = try await server.request("GET", "/.well-known/openid-configuration").body
        XCTAssertTrue(discovery.contains("\"id_token_signing_alg_values_supported\":[\"ES256\",\"RS256\"]"), discovery)
        // The other applications still get ES256.
        let wiki = try runClient(clientID: "wiki", secret: secret, cookie: try await server.signedInCookie("Ada"))
        XCTAssertEqual((wiki["id_token"] as? [String: Any])?["alg"] as? String, "ES256")
    }

    /// Tests/Interop/openid_client.py's findings, as JSON.
    private func runClient(clientID: String, secret: String, cookie: String, algorithm: String = "ES256") throws -> [String: Any] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", TestServer.repositoryRoot.appendingPathComponent("Tests/Interop/openid_client.py").path,
                             issuer, clientID, secret, redirect, cookie, algorithm]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try ProcessLauncher.shared.run(process)
        // Both pipes at once: one full pipe would stall the other (docs/DEVELOPMENT.md).
        let problems = Locked(Data())
        let reader = Thread { problems.withLock { $0 = errors.fileHandleForReading.readDataToEndOfFile() } }
        reader.start()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertTrue(Condition.wait(timeout: 10) { !reader.isExecuting })
        let stderr = String(decoding: problems.withLock { $0 }, as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, stderr)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: text) as? [String: Any], stderr)
    }
}
