import Foundation
import LiveSignupClient
import SignupDomain
@testable import Identity
@testable import SignupServer
import WebAuthn
import WebAuthnTestSupport
import XCTest

/// Issue 52, item 2: every way a session is issued goes through `SignInFunnel`, which alone
/// decides the second step. Under `second_factor: required` that now holds for accounts without
/// a password too: a passkey-only account signing in with a passkey that did not verify the
/// person, and a new passkey account, set a factor up before any session; only a passkey
/// assertion with user verification counts as two factors.
final class SignInFunnelTests: XCTestCase {
    private static let site = "https://signup.example.com"

    /// The rule cannot drift again: `SignedInUsers.signIn` is called from the funnel alone.
    func testOnlyTheFunnelIssuesSessions() throws {
        let sources = TestServer.repositoryRoot.appendingPathComponent("Sources")
        // Every file of every module, in every folder (the flows live in folders of their own).
        let files = (FileManager.default.enumerator(atPath: sources.path)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".swift") }
        XCTAssertGreaterThan(files.count, 100)
        var callers: [String] = []
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            // `SignedInUsers.signIn`, whatever the holder's name ("signedIn", "signedInUsers", …).
            if text.contains(#/signedIn\w*\??\.signIn\(/#) { callers.append(file) }
        }
        XCTAssertEqual(callers, ["Identity/SignInFunnel.swift"],
                       "a session issued outside the funnel skips its second-step rule")
    }

    func testTheRuleInOnePlace() throws {
        let server = try TestServer { $0.secondFactorRule = .required }
        defer { server.stop() }
        let funnel = SignInFunnel(server.app.services)
        let account = try server.store.createAccount(NewAccount(username: "ruled", email: "r@example.org",
                                                                passwordHash: Account.unusablePasswordHash, formToken: "ruled"))
        for proof: SignInFunnel.Proof in [.password, .passkey(userVerified: false), .provider, .mailbox, .newAccount] {
            XCTAssertTrue(try funnel.needsSecondStep(account, proof: proof), "\(proof) under required, without a password too")
        }
        XCTAssertFalse(try funnel.needsSecondStep(account, proof: .passkey(userVerified: true)), "a verifying passkey is two factors")
        XCTAssertFalse(try funnel.needsSecondStep(account, proof: .secondFactor))
    }

    private func post(_ server: TestServer, _ path: String, _ fields: [(String, String)], cookie: String? = nil) async throws
        -> (status: Int, headers: [String: String], body: String) {
        try await server.postFromScript(of: Self.site, path, fields, cookie: cookie)
    }

    func testRequiredAsksAPasskeyOnlyAccountForItsSecondStepUnlessThePasskeyVerifiedThePerson() async throws {
        let server = try TestServer {
            $0.publicOrigins = [Self.site]
            $0.secondFactorRule = .required
        }
        defer { server.stop() }
        // A sign-up with a passkey: the factor is set up before the first session.
        let form = try await server.client.openForm()
        _ = try await form.edit("username", to: "keyed", touched: true)
        _ = try await form.edit("email", to: "keyed@example.org", touched: true)
        _ = try await form.edit(CredentialMethod.fieldName, to: "passkey")
        let authenticator = SoftwareAuthenticator()
        let options = try await post(server, "/passkeys/options?token=\(form.token)", [("token", form.token)])
        let registration = try authenticator.register(options: options.body, origin: Self.site)
        let made = try await post(server, "/passkeys/register?token=\(form.token)", [("token", form.token), ("response", registration)],
                                  cookie: options.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        XCTAssertEqual(made.status, 201, made.body)
        let signup = try await server.request("POST", "/signup", body: FormURLEncoder.encode([
            ("token", form.token), ("username", "keyed"), ("email", "keyed@example.org"), ("credential", "passkey"),
        ]))
        XCTAssertEqual(signup.status, 303, signup.body)
        XCTAssertEqual(signup.headers["location"], "/signin/second-factor", "a new account sets its factor up first")
        XCTAssertFalse(signup.headers["set-cookie"]?.contains(SignedInUsers.plainCookieName + "=") == true, "no session yet")

        let account = try XCTUnwrap(try server.store.account(named: "keyed"))
        let handle = try server.store.userHandle(ofAccount: account.id)
        func signIn() async throws -> (status: Int, headers: [String: String], body: String) {
            let options = try await post(server, "/passkeys/signin/options", [])
            let assertion = try authenticator.assert(options: options.body, origin: Self.site, userHandle: handle)
            return try await post(server, "/passkeys/signin", [("response", assertion)])
        }
        // Present but not verified: one factor, so the step (a setup here), no session.
        authenticator.flags = 0x01
        let present = try await signIn()
        XCTAssertEqual(present.status, 200, present.body)
        XCTAssertTrue(present.body.contains("/signin/second-factor"), present.body)
        XCTAssertFalse(present.headers["set-cookie"]?.contains(SignedInUsers.plainCookieName + "=") == true, "no session")
        // Verified: both factors in one, a session at once.
        authenticator.flags = 0x05
        let verified = try await signIn()
        XCTAssertEqual(verified.status, 200, verified.body)
        XCTAssertTrue(verified.headers["set-cookie"]?.contains(SignedInUsers.plainCookieName + "=") == true, verified.body)
    }
}
