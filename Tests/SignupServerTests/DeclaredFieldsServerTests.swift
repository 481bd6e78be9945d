import Foundation
import LiveSignupClient
import SignupDomain
import SignupServer
import XCTest

/// Fields an operator declares in the policy file, through the whole server: the page, the
/// live states, the 422 summary, the plain (no-JavaScript) post, the stored profile, the
/// client's snapshot and `accounts list --format json`. Run with the shipped example
/// (docs/examples/policy-terms.yaml) and with a six-field file that has a select and a pattern.
final class DeclaredFieldsServerTests: XCTestCase {
    private var server: TestServer!
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-fields-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        server?.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private static let examplePath = TestServer.repositoryRoot.appendingPathComponent("docs/examples/policy-terms.yaml").path

    /// Six fields: the built-in four, a required select and a required, stored text with a pattern.
    private static let sixFields = """
        name: staff
        summary: Staff accounts
        password:
          min_length: 8
          require_uppercase: false
          min_strength: 0
        fields:
          - name: username
          - name: email
          - name: team
            kind: select
            label: Team
            required: true
            stored: true
            options: [engineering, sales, other]
            texts:
              option.engineering: Engineering
              option.sales: Sales
              option.other: Something else
          - name: employee_id
            kind: text
            label: Employee number
            hint: On your badge, like AB-1234
            required: true
            stored: true
            pattern: "[A-Z]{2}-[0-9]{4}"
            texts:
              pattern.text: Two capital letters, a hyphen, four digits
              pattern.message: Employee numbers look like AB-1234
          - name: password
          - name: confirm
        """

    private func startServer(policyPath: String) throws {
        let settings = try PolicyFile.load(path: policyPath)
        server = try TestServer { $0.policy = FormPolicy(settings) }
    }

    private func startServer(policyText: String) throws {
        let path = directory.appendingPathComponent("policy.yaml").path
        try policyText.write(toFile: path, atomically: true, encoding: .utf8)
        try startServer(policyPath: path)
    }

    /// A form session with its event stream open, and the snapshot the stream starts with.
    private func openLiveForm() async throws -> (FormSession, EventCollector, SignupSnapshot) {
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        let first = await events.wait(forCount: 1)
        guard case .snapshot(let snapshot)? = first.first else {
            events.stop()
            throw StreamStartError(events: first)
        }
        return (form, events, snapshot)
    }

    private func fieldNames(in html: String) -> [String] {
        html.matches(of: #/data-field="([a-z_]+)"/#).map { String($0.1) }
    }

    private func signupBody(token: String, username: String, extra: [(String, String)]) -> String {
        FormURLEncoder.encode([("token", token), ("username", username), ("email", "\(username)@example.com"),
                               ("password", "Correct-Horse-9"), ("confirm", "Correct-Horse-9")] + extra)
    }

    private func hasMessage(_ events: [SignupEvent], field: String, text: String, rev: Int? = nil) -> Bool {
        events.contains { event in
            if case .message(let f, let t, let r) = event { return f == field && t == text && (rev == nil || r == rev) }
            return false
        }
    }

    private func requirementState(_ events: [SignupEvent], _ id: String) -> RequirementState? {
        var state: RequirementState?
        for event in events {
            switch event {
            case .snapshot(let snapshot): state = snapshot.requirements[id] ?? state
            case .requirement(id, let new, _): state = new
            default: break
            }
        }
        return state
    }

    // MARK: The shipped example

    func testTheExamplesPageHasItsFieldsInOrderWithTheTermsLinkInEachLanguage() async throws {
        try startServer(policyPath: Self.examplePath)
        let html = try await server.request("GET", "/").body
        XCTAssertEqual(fieldNames(in: html), ["username", "display_name", "email", "password", "confirm", "terms"])
        XCTAssertTrue(html.contains(#"<input id="terms" name="terms" type="checkbox" value="on""#), html)
        XCTAssertTrue(html.contains(#"I accept the <a href="https://example.org/terms" target="_blank" rel="noopener">terms of service</a>"#))
        XCTAssertTrue(html.contains(#"data-requirement="terms.accepted""#))
        XCTAssertTrue(html.contains("Terms of service accepted"), "the field's own requirement text")
        XCTAssertTrue(html.contains(#"data-requirement="display_name.length""#))
        XCTAssertTrue(html.contains(#"autocomplete="nickname""#))
        XCTAssertTrue(html.contains(#"<p class="hint" id="display_name-hint">How other people see you. You can leave it empty.</p>"#))
        XCTAssertTrue(html.contains(#"aria-describedby="display_name-hint display_name-requirements display_name-message""#))
        XCTAssertTrue(html.contains(#"maxlength="64""#), "the browser stops where the server would")
        // Served as the live form starts: the optional, empty display name already meets its
        // length, and says it is optional; the terms box does not.
        XCTAssertTrue(html.contains(#"data-requirement="display_name.length" data-state="met""#))
        XCTAssertTrue(html.contains(#"data-requirement="terms.accepted" data-state="unmet""#))
        XCTAssertTrue(html.contains(#"<label for="display_name">Display name <span class="optional">(optional)</span></label>"#), html)
        XCTAssertFalse(html.contains(#"terms of service</a> <span class="optional">"#))

        let german = try await server.request("GET", "/?lang=de").body
        XCTAssertTrue(german.contains(#"Ich akzeptiere die <a href="https://example.org/terms" target="_blank" rel="noopener">Nutzungsbedingungen</a>"#))
        XCTAssertTrue(german.contains("Anzeigename"))
        XCTAssertTrue(german.contains("Nutzungsbedingungen akzeptiert"))
    }

    func testTheExamplesFieldsAreLiveLikeTheBuiltInOnes() async throws {
        try startServer(policyPath: Self.examplePath)
        let (form, events, snapshot) = try await openLiveForm()
        defer { events.stop() }
        XCTAssertEqual(Set(snapshot.messages.keys), ["username", "display_name", "email", "password", "confirm", "terms"])
        XCTAssertEqual(snapshot.requirements["terms.accepted"], .unmet)
        XCTAssertEqual(snapshot.requirements["display_name.length"], .met, "an optional field left empty is fine")

        // Too long, then fixed.
        let long = try await form.edit("display_name", to: String(repeating: "x", count: 65), touched: true)
        await events.wait { self.hasMessage($0, field: "display_name", text: "Display name must be at most 64 characters", rev: long.rev) }
        let fixed = try await form.edit("display_name", to: "Ada", touched: true)
        await events.wait { self.hasMessage($0, field: "display_name", text: "", rev: fixed.rev) }

        // Leaving the box unticked says why; ticking it meets the requirement.
        let unticked = try await form.edit("terms", to: "", touched: true)
        await events.wait { self.hasMessage($0, field: "terms", text: "Accept the terms of service to create an account", rev: unticked.rev) }
        _ = try await form.edit("terms", to: "on", touched: true)
        await events.wait { self.requirementState($0, "terms.accepted") == .met }

        // Everything valid: Sign up is enabled only now.
        for (field, value) in [("username", "newperson"), ("email", "new@example.com"),
                               ("password", "Correct-Horse-9"), ("confirm", "Correct-Horse-9")] {
            _ = try await form.edit(field, to: value)
        }
        await events.wait { $0.contains { if case .submit(enabled: true, _) = $0 { return true }; return false } }
        _ = try await form.edit("terms", to: "", touched: true)
        await events.wait { $0.last.map { if case .submit(enabled: false, _) = $0 { return true }; return false } ?? false }
    }

    func testAPlainPostWithoutTheBoxTickedIsRefusedWithTheSummaryAndKeepsWhatWasTyped() async throws {
        try startServer(policyPath: Self.examplePath)
        let form = try await server.client.openForm()
        let answer = try await server.request("POST", "/signup", body: signupBody(
            token: form.token, username: "newperson", extra: [("display_name", "Ada <L>")]))
        XCTAssertEqual(answer.status, 422, answer.body)
        XCTAssertTrue(answer.body.contains(##"<li><a href="#terms">Accept the terms of service to create an account</a></li>"##), answer.body)
        XCTAssertTrue(answer.body.contains(#"value="Ada &lt;L&gt;""#), "the display name is kept, escaped")
        XCTAssertFalse(answer.body.contains("checked"), "the box stays as it was sent: unticked")
        XCTAssertNil(try server.store.account(named: "newperson"), "nothing stored")
    }

    func testAPlainPostWithTheBoxTickedStoresTheProfileAndAccountsListShowsIt() async throws {
        try startServer(policyPath: Self.examplePath)
        let form = try await server.client.openForm()
        let before = Date(timeIntervalSinceNow: -1)
        let answer = try await server.request("POST", "/signup", body: signupBody(
            token: form.token, username: "newperson", extra: [("display_name", "Ada Lovelace"), ("terms", "on")]))
        XCTAssertEqual(answer.status, 303, answer.body)
        let after = Date(timeIntervalSinceNow: 1)

        let account = try XCTUnwrap(try server.store.account(named: "newperson"))
        XCTAssertEqual(account.profile["display_name"], .string("Ada Lovelace"))
        XCTAssertEqual(account.profile["terms"], .bool(true))
        XCTAssertEqual(account.profile["terms_url"], .string("https://example.org/terms"))
        guard case .string(let stamp)? = account.profile["terms_accepted_at"],
              let accepted = ISO8601DateFormatter().date(from: stamp) else {
            return XCTFail("terms_accepted_at: \(String(describing: account.profile["terms_accepted_at"]))")
        }
        XCTAssertTrue(before <= accepted && accepted <= after, "\(accepted) between \(before) and \(after)")
        XCTAssertEqual(account.profile.count, 4, "only stored fields: \(account.profile)")

        // The operator's view: one JSON array, each account with its profile, no hashes.
        let (status, output, _) = try ServerProcess.run(["accounts", "list", "--format", "json", "--database", server.store.path])
        XCTAssertEqual(status, 0, output)
        let listed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]])
        let entry = try XCTUnwrap(listed.first { $0["username"] as? String == "newperson" })
        let profile = try XCTUnwrap(entry["profile"] as? [String: Any])
        XCTAssertEqual(profile["display_name"] as? String, "Ada Lovelace")
        XCTAssertEqual(profile["terms_url"] as? String, "https://example.org/terms")
        XCTAssertEqual(entry["can_sign_in"] as? Bool, true)
        XCTAssertFalse(output.contains("argon2"), "never a password hash")
    }

    // MARK: Six fields, a select and a pattern

    func testSixFieldsWithASelectAndAPatternRenderLiveRefuseAndStore() async throws {
        try startServer(policyText: Self.sixFields)
        let html = try await server.request("GET", "/").body
        XCTAssertEqual(fieldNames(in: html), ["username", "email", "team", "employee_id", "password", "confirm"])
        XCTAssertTrue(html.contains(#"<option value="">Choose…</option>"#), html)
        XCTAssertTrue(html.contains(#"<option value="sales">Sales</option>"#))
        XCTAssertTrue(html.contains("Two capital letters, a hyphen, four digits"))

        let (form, events, snapshot) = try await openLiveForm()
        defer { events.stop() }
        XCTAssertEqual(Set(snapshot.messages.keys), ["username", "email", "team", "employee_id", "password", "confirm"])
        XCTAssertEqual(snapshot.requirements["team.required"], .unmet)
        XCTAssertEqual(snapshot.requirements["employee_id.pattern"], .unmet)

        let wrong = try await form.edit("employee_id", to: "ab-12", touched: true)
        await events.wait { self.hasMessage($0, field: "employee_id", text: "Employee numbers look like AB-1234", rev: wrong.rev) }
        _ = try await form.edit("employee_id", to: "AB-1234", touched: true)
        await events.wait { self.requirementState($0, "employee_id.pattern") == .met }
        let made = try await form.edit("team", to: "ceo", touched: true)
        await events.wait { self.hasMessage($0, field: "team", text: "Choose one of the listed options for Team", rev: made.rev) }

        // A field the form does not have is refused, naming the ones it has.
        let unknown = try await server.request("POST", "/fields", body: FormURLEncoder.encode(
            [("token", form.token), ("field", "nickname"), ("value", "x"), ("seq", "1")]))
        XCTAssertEqual(unknown.status, 400)
        XCTAssertTrue(unknown.body.contains("username, email, team, employee_id, password, confirm"), unknown.body)

        // The plain post: the missing select is in the summary, then the complete form is stored.
        let missing = try await server.request("POST", "/signup", body: signupBody(
            token: form.token, username: "worker", extra: [("employee_id", "AB-1234")]))
        XCTAssertEqual(missing.status, 422)
        XCTAssertTrue(missing.body.contains(##"<li><a href="#team">Team is required</a></li>"##), missing.body)
        XCTAssertTrue(missing.body.contains(#"value="AB-1234""#))
        let stored = try await server.request("POST", "/signup", body: signupBody(
            token: form.token, username: "worker", extra: [("employee_id", "AB-1234"), ("team", "sales")]))
        XCTAssertEqual(stored.status, 303, stored.body)
        let account = try XCTUnwrap(try server.store.account(named: "worker"))
        XCTAssertEqual(account.profile, ["team": .string("sales"), "employee_id": .string("AB-1234")])
    }
}

/// A stream that did not begin with its snapshot (fails the test that opened it).
private struct StreamStartError: Error, CustomStringConvertible {
    let events: [SignupEvent]
    var description: String { "the stream did not start with a snapshot: \(events)" }
}
