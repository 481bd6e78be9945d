import Foundation
import LiveSignupClient
import SignupDomain
import SignupWire
import WebAuthn
import WebAuthnTestSupport
import XCTest

/// Passkeys over HTTP, whole ceremonies with a software authenticator: the credential edit
/// swaps the checklist in the stream; a sign-up with a passkey and no password; signing in
/// with it; adding one to a password account; and each refusal by its reason, with nothing
/// stored. (The browser suite does the same with Chromium's authenticator and py_webauthn.)
final class PasskeyServerTests: XCTestCase {
    private var server: TestServer!
    private static let site = "https://signup.example.com"

    override func setUpWithError() throws {
        server = try TestServer { $0.publicOrigins = [Self.site] }
    }

    override func tearDown() {
        server.stop()
    }

    private func post(_ path: String, _ fields: [(String, String)], cookie: String? = nil) async throws
        -> (status: Int, headers: [String: String], body: String) {
        try await server.postFromScript(of: Self.site, path, fields, cookie: cookie)
    }

    /// The cookie the form's passkey options came with (`name=value`).
    static func browserCookie(_ headers: [String: String]) -> String? {
        headers["set-cookie"]?.split(separator: ";").first.map(String.init)
    }

    private func json(_ body: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any], body)
    }

    private func reason(_ response: (status: Int, headers: [String: String], body: String)) throws -> String {
        try json(response.body)["reason"] as? String ?? "none: \(response.body)"
    }

    /// A form with its username and email typed and a passkey chosen.
    private func passkeyForm(_ username: String) async throws -> FormSession {
        let form = try await server.client.openForm()
        _ = try await form.edit("username", to: username, touched: true)
        _ = try await form.edit("email", to: "\(username)@example.org", touched: true)
        _ = try await form.edit(CredentialMethod.fieldName, to: "passkey")
        return form
    }

    /// Makes the form's passkey with `authenticator`; returns the registration's answer.
    private func makePasskey(_ form: FormSession, with authenticator: SoftwareAuthenticator) async throws
        -> (status: Int, headers: [String: String], body: String) {
        let options = try await post("/passkeys/options?token=\(form.token)", [("token", form.token)])
        XCTAssertEqual(options.status, 200, options.body)
        let response = try authenticator.register(options: options.body, origin: Self.site)
        return try await post("/passkeys/register?token=\(form.token)", [("token", form.token), ("response", response)],
                              cookie: Self.browserCookie(options.headers))
    }

    private func signUp(_ form: FormSession, username: String, credential: String = "passkey")
        async throws -> (status: Int, headers: [String: String], body: String) {
        try await server.request("POST", "/signup", body: FormURLEncoder.encode([
            ("token", form.token), ("username", username), ("email", "\(username)@example.org"),
            ("credential", credential),
        ]))
    }

    private func signIn(with authenticator: SoftwareAuthenticator, handle: [UInt8]) async throws
        -> (status: Int, headers: [String: String], body: String) {
        let options = try await post("/passkeys/signin/options", [])
        XCTAssertEqual(options.status, 200, options.body)
        let assertion = try authenticator.assert(options: options.body, origin: Self.site, userHandle: handle)
        return try await post("/passkeys/signin", [("response", assertion)])
    }

    /// Issue 43: a passkey that verified the person (UV) is a fresh sign-in, and the account
    /// page's changes are open at once; one that only showed it was there (UP alone) signs in
    /// but opens nothing until the person confirms.
    func testOnlyAVerifyingPasskeyOpensTheAccountsChanges() async throws {
        let form = try await passkeyForm("uv_keys")
        let authenticator = SoftwareAuthenticator()
        let made = try await makePasskey(form, with: authenticator)
        XCTAssertEqual(made.status, 201, made.body)
        let created = try await signUp(form, username: "uv_keys")
        XCTAssertEqual(created.status, 303, created.body)
        let account = try XCTUnwrap(try server.store.account(named: "uv_keys"))
        let handle = try server.store.userHandle(ofAccount: account.id)

        let verified = try await signIn(with: authenticator, handle: handle)
        XCTAssertEqual(verified.status, 200, verified.body)
        let verifiedCookie = try XCTUnwrap(Self.browserCookie(verified.headers))
        let open = try await server.request("GET", "/account/export", headers: ["Cookie": verifiedCookie])
        XCTAssertEqual(open.status, 200, "user verification: a fresh sign-in")

        authenticator.flags = 0x01 // user present, not verified
        let present = try await signIn(with: authenticator, handle: handle)
        XCTAssertEqual(present.status, 200, present.body)
        let presentCookie = try XCTUnwrap(Self.browserCookie(present.headers))
        let closed = try await server.request("GET", "/account/export", headers: ["Cookie": presentCookie])
        XCTAssertEqual(closed.status, 303)
        XCTAssertEqual(closed.headers["location"], "/account?continue=export", "confirm first")
    }

    func testChoosingAPasskeySwapsTheChecklistAndItsMakingEnablesSignUp() async throws {
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        _ = try await form.edit("username", to: "ada_keys", touched: true)
        _ = try await form.edit("email", to: "ada@example.org", touched: true)
        _ = try await form.edit(CredentialMethod.fieldName, to: "passkey")
        let swapped = await events.wait { $0.contains { if case .requirement("passkey.created", .unmet, _) = $0 { true } else { false } } }
        let credential = try XCTUnwrap(swapped.firstIndex { if case .credential(.passkey, _) = $0 { true } else { false } })
        let created = try XCTUnwrap(swapped.firstIndex { if case .requirement("passkey.created", _, _) = $0 { true } else { false } })
        XCTAssertLessThan(credential, created, "the checklist swaps before its states arrive: \(swapped)")

        let reconnect = EventCollector(form.events())
        let snapshot = await reconnect.wait(forCount: 1)
        guard case .snapshot(let state) = snapshot.first else { return XCTFail("no snapshot") }
        XCTAssertEqual(state.credential, .passkey)
        XCTAssertEqual(state.requirements["passkey.created"], .unmet)
        XCTAssertFalse(state.requirements.keys.contains { $0.hasPrefix("password.") || $0.hasPrefix("confirm.") },
                       "the password's checklist left: \(state.requirements.keys.sorted())")
        XCTAssertNil(state.messages["password"])
        XCTAssertFalse(state.submitEnabled)

        let made = try await makePasskey(form, with: SoftwareAuthenticator())
        XCTAssertEqual(made.status, 201, made.body)
        await events.wait { $0.contains { if case .submit(true, _) = $0 { true } else { false } } }
        XCTAssertEqual(events.events.last { if case .requirement("passkey.created", _, _) = $0 { true } else { false } },
                       .requirement(id: "passkey.created", state: .met, rev: events.events.compactMap(\.rev).max() ?? 0),
                       "met, at the latest rev")

        // Back to a password: its checklist returns, and Sign up waits for it.
        _ = try await form.edit(CredentialMethod.fieldName, to: "password")
        await events.wait { $0.contains { if case .credential(.password, _) = $0 { true } else { false } } }
        await events.wait { $0.contains { if case .submit(false, _) = $0 { true } else { false } } }
        events.stop()
        reconnect.stop()
    }

    func testASignUpWithAPasskeyStoresItAndItSignsIn() async throws {
        let form = try await passkeyForm("grace_keys")
        let authenticator = SoftwareAuthenticator()
        let made = try await makePasskey(form, with: authenticator)
        XCTAssertEqual(made.status, 201, made.body)
        let created = try await signUp(form, username: "grace_keys")
        XCTAssertEqual(created.status, 303, created.body)
        XCTAssertEqual(created.headers["location"], "/welcome")

        let account = try XCTUnwrap(try server.store.account(named: "grace_keys"))
        XCTAssertEqual(account.passwordHash, Account.unusablePasswordHash)
        let stored = try server.store.passkeys(ofAccount: account.id)
        XCTAssertEqual(stored.map(\.credentialID), [authenticator.credentialID])
        XCTAssertEqual(stored.first?.algorithm, -7)
        let handle = try server.store.userHandle(ofAccount: account.id)

        let signedIn = try await signIn(with: authenticator, handle: handle)
        XCTAssertEqual(signedIn.status, 200, signedIn.body)
        XCTAssertEqual(try json(signedIn.body)["location"] as? String, "/welcome")
        let cookie = try XCTUnwrap(signedIn.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let auth = try await server.request("GET", "/auth", headers: ["Cookie": cookie])
        XCTAssertEqual(auth.status, 200)
        XCTAssertEqual(auth.headers["x-auth-request-user"], "grace_keys")
        XCTAssertEqual(try server.store.passkeys(ofAccount: account.id).first?.signCount, 1, "the counter is kept")

        // No password signs in to it, not even an empty one or the marker.
        for password in ["!", "x"] {
            let refused = try await server.request("POST", "/signin", body: FormURLEncoder.encode(
                [("username", "grace_keys"), ("password", password)]))
            XCTAssertEqual(refused.status, 401)
        }
    }

    func testAPasswordAccountAddsAPasskeyAndSignsInWithIt() async throws {
        let form = try await server.client.openForm()
        let signedUp = try await server.request("POST", "/signup", body: FormURLEncoder.encode([
            ("token", form.token), ("username", "hopper"), ("email", "hopper@example.org"),
            ("password", "Cobol-Rocks-1959"), ("confirm", "Cobol-Rocks-1959"),
        ]))
        XCTAssertEqual(signedUp.status, 303, signedUp.body)
        let cookie = try XCTUnwrap(signedUp.headers["set-cookie"]?.split(separator: ";").first.map(String.init))

        let outside = try await post("/account/passkeys/options", [])
        XCTAssertEqual(outside.status, 401)
        XCTAssertEqual(try reason(outside), "signed_out")

        let authenticator = SoftwareAuthenticator()
        let options = try await post("/account/passkeys/options", [], cookie: cookie)
        XCTAssertEqual(options.status, 200, options.body)
        let response = try authenticator.register(options: options.body, origin: Self.site)
        let added = try await post("/account/passkeys", [("response", response)], cookie: cookie)
        XCTAssertEqual(added.status, 201, added.body)
        XCTAssertEqual(try json(added.body)["passkeys"] as? Int, 1)
        let again = try await post("/account/passkeys", [("response", response)], cookie: cookie)
        XCTAssertEqual(again.status, 409, "its challenge was spent")
        XCTAssertEqual(try reason(again), "replayed")

        // The browser's own offer (conditional create) may come without "user present"; only
        // a challenge asked for that way accepts it.
        let unattended = SoftwareAuthenticator()
        unattended.flags = 0x04
        let buttonOptions = try await post("/account/passkeys/options", [], cookie: cookie)
        let pressed = try await post("/account/passkeys", [("response", try unattended.register(
            options: buttonOptions.body, origin: Self.site))], cookie: cookie)
        XCTAssertEqual(pressed.status, 422)
        XCTAssertEqual(try reason(pressed), "user_not_present")
        let offerOptions = try await post("/account/passkeys/options", [("mediation", "conditional")], cookie: cookie)
        let offered = try await post("/account/passkeys", [("response", try unattended.register(
            options: offerOptions.body, origin: Self.site))], cookie: cookie)
        XCTAssertEqual(offered.status, 201, offered.body)

        let welcome = try await server.request("GET", "/welcome", headers: ["Cookie": cookie])
        XCTAssertTrue(welcome.body.contains(#"data-passkeys="2""#))
        let account = try XCTUnwrap(try server.store.account(named: "hopper"))
        let signedIn = try await signIn(with: authenticator, handle: try server.store.userHandle(ofAccount: account.id))
        XCTAssertEqual(signedIn.status, 200, signedIn.body)
    }

    func testEveryRefusalNamesItsReasonAndStoresNothing() async throws {
        let control = try await server.client.openForm()
        _ = try await control.edit("username", to: "control_person")

        // Requests that are wrong before any ceremony.
        let unknown = try await post("/passkeys/options?token=nope", [("token", "nope")])
        XCTAssertEqual(unknown.status, 404)
        let blank = try await server.client.openForm()
        let noUsername = try await post("/passkeys/options?token=\(blank.token)", [("token", blank.token)])
        XCTAssertEqual(noUsername.status, 409)
        XCTAssertEqual(try reason(noUsername), "username_first")
        XCTAssertFalse((try json(noUsername.body)["message"] as? String ?? "").isEmpty, "a readable message")
        let badChoice = try await server.request("POST", "/fields", body: FormURLEncoder.encode(
            [("token", blank.token), ("field", "credential"), ("value", "fingerprint"), ("seq", "1")]))
        XCTAssertEqual(badChoice.status, 400)
        XCTAssertTrue(badChoice.body.contains("invalid_credential"), badChoice.body)
        let badSignup = try await signUp(blank, username: "nobody_here", credential: "fingerprint")
        XCTAssertEqual(badSignup.status, 400)
        XCTAssertTrue(badSignup.body.contains("invalid_credential"), badSignup.body)

        // Registrations on the form.
        let form = try await passkeyForm("mallory")
        let withoutOptions = try await post("/passkeys/register?token=\(form.token)",
                                            [("token", form.token), ("response", "{}")])
        XCTAssertEqual(withoutOptions.status, 409)
        XCTAssertEqual(try reason(withoutOptions), "expired")
        func register(_ authenticator: SoftwareAuthenticator, origin: String = PasskeyServerTests.site,
                      mangle: (String) -> String = { $0 }) async throws -> (status: Int, headers: [String: String], body: String) {
            let options = try await post("/passkeys/options?token=\(form.token)", [("token", form.token)])
            let response = mangle(try authenticator.register(options: options.body, origin: origin))
            return try await post("/passkeys/register?token=\(form.token)", [("token", form.token), ("response", response)],
                                  cookie: Self.browserCookie(options.headers))
        }
        let malformed = try await register(SoftwareAuthenticator()) { _ in #"{"id":"!"}"# }
        XCTAssertEqual(malformed.status, 400)
        XCTAssertEqual(try reason(malformed), "malformed")
        let elsewhere = try await register(SoftwareAuthenticator(), origin: "https://evil.example")
        XCTAssertEqual(elsewhere.status, 422)
        XCTAssertEqual(try reason(elsewhere), "wrong_origin")
        let absent = SoftwareAuthenticator()
        absent.flags = 0x04  // UV without UP: nobody touched it
        let notPresent = try await register(absent)
        XCTAssertEqual(notPresent.status, 422)
        XCTAssertEqual(try reason(notPresent), "user_not_present")
        let claimed = try await signUp(form, username: "mallory")
        XCTAssertEqual(claimed.status, 422, "no passkey was made: the form is refused")
        XCTAssertTrue(claimed.body.contains("Create a passkey for this site"), claimed.body)
        XCTAssertNil(try server.store.account(named: "mallory"))

        // Sign-ins.
        let garbage = try await post("/passkeys/signin", [("response", "not json")])
        XCTAssertEqual(garbage.status, 400)
        XCTAssertEqual(try reason(garbage), "malformed")
        let stranger = try await signIn(with: SoftwareAuthenticator(), handle: [1, 2, 3])
        XCTAssertEqual(stranger.status, 401)
        XCTAssertEqual(try reason(stranger), "unknown_credential")
        let forgedOptions = RequestOptions(relyingParty: RelyingParty(id: "signup.example.com", origins: [Self.site]),
                                           challenge: (0..<56).map { UInt8($0) }, timeoutMilliseconds: 1000).json
        let forged = try await post("/passkeys/signin", [("response", try SoftwareAuthenticator().assert(
            options: forgedOptions, origin: Self.site, userHandle: [1]))])
        XCTAssertEqual(forged.status, 401)
        XCTAssertEqual(try reason(forged), "forged")

        let owner = try await passkeyForm("owner_keys")
        let key = SoftwareAuthenticator()
        _ = try await makePasskey(owner, with: key)
        _ = try await signUp(owner, username: "owner_keys")
        let account = try XCTUnwrap(try server.store.account(named: "owner_keys"))
        let handle = try server.store.userHandle(ofAccount: account.id)
        let options = try await post("/passkeys/signin/options", [])
        let assertion = try key.assert(options: options.body, origin: Self.site, userHandle: handle)
        let first = try await post("/passkeys/signin", [("response", assertion)])
        XCTAssertEqual(first.status, 200, first.body)
        let replayed = try await post("/passkeys/signin", [("response", assertion)])
        XCTAssertEqual(replayed.status, 409)
        XCTAssertEqual(try reason(replayed), "replayed")
        let otherHandle = try await signIn(with: key, handle: Array(repeating: 7, count: 32))
        XCTAssertEqual(otherHandle.status, 401)
        XCTAssertEqual(try reason(otherHandle), "wrong_user")

        // Nobody else was disturbed: the control form still takes edits, its owner still signs in.
        let edit = try await control.edit("email", to: "control@example.org")
        XCTAssertTrue(edit.applied)
        let stillWorks = try await signIn(with: key, handle: handle)
        XCTAssertEqual(stillWorks.status, 200, stillWorks.body)
    }
}
