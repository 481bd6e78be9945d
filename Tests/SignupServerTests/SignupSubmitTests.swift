import Foundation
import LiveSignupClient
import SignupDomain
import XCTest

/// Pressing Sign up: `POST /signup` creates a lasting account or explains what to fix.
final class SignupSubmitTests: XCTestCase {
    var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer()
    }

    override func tearDown() {
        server.stop()
    }

    private func formBody(token: String, username: String = "newperson", email: String = "new@example.com",
                          password: String = "Correct-Horse-9", confirm: String? = nil) -> String {
        FormURLEncoder.encode([("token", token), ("username", username), ("email", email),
                               ("password", password), ("confirm", confirm ?? password)])
    }

    private func submit(_ body: String) async throws -> (status: Int, headers: [String: String], body: String) {
        try await server.request("POST", "/signup", body: body)
    }

    /// Sends the submits at the same moment, as two tabs or a double click would.
    private func submitTogether(_ first: String, _ second: String) async throws
        -> [(status: Int, headers: [String: String], body: String)] {
        let baseURL = server.baseURL
        async let a = TestServer.request(to: baseURL, "POST", "/signup", body: first)
        async let b = TestServer.request(to: baseURL, "POST", "/signup", body: second)
        return try await [a, b]
    }

    func testValidSignupRedirectsToAWelcomeThatGreetsByNameAndStoresTheAccount() async throws {
        let form = try await server.client.openForm()
        let response = try await submit(formBody(token: form.token, username: "Ada_Lovelace"))
        XCTAssertEqual(response.status, 303, response.body)
        XCTAssertEqual(response.headers["location"], "/welcome")
        let cookie = try XCTUnwrap(response.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        XCTAssertTrue(response.headers["set-cookie"]!.contains("HttpOnly"))

        let welcome = try await server.request("GET", "/welcome", headers: ["Cookie": cookie])
        XCTAssertEqual(welcome.status, 200)
        XCTAssertTrue(welcome.body.contains("Welcome, <bdi>Ada_Lovelace</bdi>!"))

        let stored = try XCTUnwrap(try server.store.account(named: "ada_lovelace"))
        XCTAssertEqual(stored.username, "Ada_Lovelace")
        XCTAssertEqual(stored.email, "new@example.com")
        XCTAssertTrue(stored.passwordHash.hasPrefix("$argon2id$"), "stored hashed, never plain")
        XCTAssertNotEqual(stored.passwordHash, "Correct-Horse-9")
    }

    func testWelcomeWithoutSigningInSendsToSignIn() async throws {
        let response = try await server.request("GET", "/welcome")
        XCTAssertEqual(response.status, 303)
        XCTAssertEqual(response.headers["location"], "/signin")
    }

    func testEachInvalidFieldGets422WithSummaryAndKeptValues() async throws {
        let cases: [(field: String, override: (String) -> String, message: String)] = [
            ("username", { self.formBody(token: $0, username: "ab") }, "Username must be at least 4 characters"),
            ("username", { self.formBody(token: $0, username: "alice") }, "That username is taken"),
            ("email", { self.formBody(token: $0, email: "not-an-email") }, "Enter an email address like name@example.com"),
            ("password", { self.formBody(token: $0, password: "password1", confirm: "password1") },
             "Password must include an uppercase letter"),
            ("confirm", { self.formBody(token: $0, confirm: "Correct-Horse-8") }, "Passwords don&#39;t match"),
        ]
        for (field, body, message) in cases {
            let form = try await server.client.openForm()
            let response = try await submit(body(form.token))
            XCTAssertEqual(response.status, 422, field)
            let html = response.body
            XCTAssertTrue(html.contains("<title>Error: Create an account"), field)
            XCTAssertTrue(html.contains("There is a problem"), field)
            XCTAssertTrue(html.contains(##"href="#\##(field)""##), "summary links to \(field)")
            XCTAssertTrue(html.contains(message) || html.contains(message.replacingOccurrences(of: "&#39;", with: "'")),
                          "\(field): \(message)")
            let input = try XCTUnwrap(html.firstMatch(of: try Regex(#"<input id="\#(field)"[^>]*>"#))?.0)
            XCTAssertTrue(input.contains(#"aria-invalid="true""#), "\(field) marked invalid")
            XCTAssertFalse(html.contains("Correct-Horse"), "passwords are never sent back")
            if field != "username" { XCTAssertTrue(html.contains(#"value="newperson""#), "username kept") }
            if field != "email" { XCTAssertTrue(html.contains(#"value="new@example.com""#), "email kept") }
        }
        XCTAssertEqual(try server.store.allAccounts().count, TestServer.takenUsernames.count, "nothing stored")
    }

    func testTheReturnedPageOffersATyposCorrectionAndATypoNeverBlocksASignUp() async throws {
        let blank = try await server.request("GET", "/")
        XCTAssertTrue(blank.body.contains(#"<p class="suggestion" id="email-suggestion" data-suggestion="email" aria-live="polite"></p>"#),
                      "an empty slot on a fresh page")
        let form = try await server.client.openForm()
        let refused = try await submit(formBody(token: form.token, email: "ada@gmial.com", password: "", confirm: ""))
        XCTAssertEqual(refused.status, 422)
        XCTAssertTrue(refused.body.contains("Did you mean <strong>ada@gmail.com</strong>?"), "without JavaScript too")
        XCTAssertTrue(refused.body.contains(#"value="ada@gmial.com""#), "what was typed is kept, not replaced")

        let another = try await server.client.openForm()
        let accepted = try await submit(formBody(token: another.token, username: "typo_person", email: "ada@gmial.com"))
        XCTAssertEqual(accepted.status, 303, "only a suggestion")
        XCTAssertEqual(try server.store.account(named: "typo_person")?.email, "ada@gmial.com")
    }

    func testTwoSimultaneousSubmitsOfOneNameCreateExactlyOneAccount() async throws {
        let first = try await server.client.openForm()
        let second = try await server.client.openForm()
        let statuses = try await submitTogether(formBody(token: first.token, username: "Racer"),
                                                formBody(token: second.token, username: "racer"))
        XCTAssertEqual(statuses.map(\.status).sorted(), [303, 422])
        let loser = try XCTUnwrap(statuses.first { $0.status == 422 })
        XCTAssertTrue(loser.body.contains("That username is taken"))
        XCTAssertEqual(try server.store.allAccounts().filter { Username.canonical($0.username) == "racer" }.count, 1)
    }

    func testAUsedFormCannotCreateASecondAccount() async throws {
        let form = try await server.client.openForm()
        let created = try await submit(formBody(token: form.token, username: "onlyonce"))
        XCTAssertEqual(created.status, 303)
        let replay = try await submit(formBody(token: form.token, username: "onlyonce"))
        let other = try await submit(formBody(token: form.token, username: "anothername"))
        for response in [replay, other] {
            XCTAssertEqual(response.status, 409)
            XCTAssertTrue(response.body.contains("already used to create an account"))
        }
        XCTAssertEqual(try server.store.allAccounts().count, TestServer.takenUsernames.count + 1)
    }

    func testADoubleClickCreatesOneAccount() async throws {
        let form = try await server.client.openForm()
        let statuses = try await submitTogether(formBody(token: form.token, username: "doubleclick"),
                                                formBody(token: form.token, username: "doubleclick"))
            .map(\.status).sorted()
        XCTAssertEqual(statuses, [303, 409])
        XCTAssertEqual(try server.store.allAccounts().count, TestServer.takenUsernames.count + 1)
    }

    func testExpiredFormIsShownAgainWithAFreshTokenAndTheValues() async throws {
        let response = try await submit(formBody(token: "00000000000000000000000000000000"))
        XCTAssertEqual(response.status, 422)
        XCTAssertTrue(response.body.contains("This form had expired"))
        XCTAssertTrue(response.body.contains(#"value="newperson""#))
        let token = try XCTUnwrap(response.body.firstMatch(of: #/name="token" value="([a-z0-9-]+\.[0-9a-f]{56})"/#)?.1)
        let retry = try await submit(formBody(token: String(token)))
        XCTAssertEqual(retry.status, 303)
    }

    func testFreshSessionForAPageWhoseTokenWasLost() async throws {
        let response = try await server.request("POST", "/sessions", body: "", contentType: nil)
        XCTAssertEqual(response.status, 201)
        let token = try XCTUnwrap(response.body.firstMatch(of: #/"token":"([a-z0-9-]+\.[0-9a-f]{56})"/#)?.1)
        let edit = try await FormSession(client: server.client, token: String(token)).edit("email", to: "a@example.com")
        XCTAssertTrue(edit.applied)
    }

    func testRerenderedPageKeepsTheLiveSessionConsistent() async throws {
        let form = try await server.client.openForm()
        _ = try await form.edit("password", to: "Correct-Horse-9")
        let response = try await submit(formBody(token: form.token, email: "bad"))
        XCTAssertEqual(response.status, 422)
        XCTAssertTrue(response.body.contains(#"value="\#(form.token)""#), "the same form session continues")
        let events = EventCollector(form.events())
        let first = await events.wait(forCount: 1)
        guard case .snapshot(let snapshot) = first[0] else { return XCTFail("expected a snapshot") }
        XCTAssertEqual(snapshot.requirements["password.length"], .unmet, "the re-rendered page has empty passwords")
        XCTAssertEqual(snapshot.messages["email"], "Enter an email address like name@example.com")
        // The reloaded page's script counts seqs from 1 again, and its edits apply.
        let edit = try await form.post(field: "email", value: "ok@example.com", seq: 1)
        XCTAssertTrue(edit.applied)
    }
}
