import Foundation
import LiveSignupClient
import SignupDomain
import XCTest

/// The page, the events and the submit check all follow the selected policy.
final class PolicySelectionTests: XCTestCase {
    private func requirementIDs(in html: String) -> [String] {
        html.matches(of: #/data-requirement="([a-z.]+)"/#).map { String($0.1) }
    }

    func testThePageListsEachPolicysChecklist() async throws {
        for (policy, passwordIDs, lengthText) in [
            (Policy.classic, ["password.length", "password.uppercase", "password.common", "password.strength"],
             "At least 8 characters"),
            (Policy.nist, ["password.length", "password.common", "password.strength"], "At least 15 characters"),
        ] {
            let server = try TestServer { $0.policy = FormPolicy(policy) }
            defer { server.stop() }
            let html = try await server.request("GET", "/").body
            XCTAssertTrue(html.contains(#"data-policy="\#(policy.name)""#), policy.name)
            XCTAssertEqual(requirementIDs(in: html).filter { $0.hasPrefix("password.") }, passwordIDs, policy.name)
            XCTAssertTrue(html.contains(lengthText), policy.name)
            for autocomplete in ["username", "email", "new-password"] {
                XCTAssertTrue(html.contains(#"autocomplete="\#(autocomplete)""#), "\(policy.name): \(autocomplete)")
            }
            // Password managers generate to the policy; maxlength is the byte bound (UTF-16
            // units never outnumber UTF-8 bytes), so no acceptable password is cut short.
            let rules = policy.requiresUppercase ? " required: upper;" : ""
            XCTAssertEqual(html.matches(of: #/minlength="(\d+)" maxlength="(\d+)" passwordrules="([^"]+)"/#).map { "\($0.1) \($0.2) \($0.3)" },
                           Array(repeating: "\(policy.passwordMinimumLength) 1024 minlength: \(policy.passwordMinimumLength); maxlength: 1024;\(rules)", count: 2),
                           "on the password and its confirmation")
            XCTAssertTrue(html.contains(#"data-submit-enabled="false""#), "not ready before anything is typed")
            XCTAssertTrue(html.contains("data-reveal"), "a show/hide password toggle")

            let form = try await server.client.openForm()
            let events = EventCollector(form.events())
            let first = await events.wait(forCount: 1)
            guard case .snapshot(let snapshot) = first.first else { return XCTFail("no snapshot") }
            // The page holds the passkey's step too; the stream, the password's checklist.
            XCTAssertEqual(Set(snapshot.requirements.keys), Set(requirementIDs(in: html)).subtracting(["passkey.created"]),
                           policy.name)
            XCTAssertEqual(snapshot.credential, .password)
        }
    }

    func testTheSubmitCheckFollowsThePolicy() async throws {
        // Long enough and strong enough for classic, under 15 characters for NIST.
        let password = "Quiet-Otter-742"
        XCTAssertEqual(password.count, 15)
        let shorter = "Quiet-Otter-74"
        for (policy, status) in [(Policy.classic, 303), (Policy.nist, 422)] {
            let server = try TestServer { $0.policy = FormPolicy(policy) }
            defer { server.stop() }
            let form = try await server.client.openForm()
            let body = FormURLEncoder.encode([
                ("token", form.token), ("username", "otterfan"), ("email", "otter@example.com"),
                ("password", shorter), ("confirm", shorter),
            ])
            let response = try await server.request("POST", "/signup", body: body)
            XCTAssertEqual(response.status, status, policy.name)
            if status == 422 {
                XCTAssertTrue(response.body.contains("Password must be at least 15 characters"), policy.name)
            }
        }
    }

    func testReservedNamesAreTakenLiveAndOnSubmit() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        _ = try await form.edit("username", to: "Postmaster", touched: true)
        let all = await events.wait { $0.contains { event in
            if case .message(field: "username", text: "That username is taken", _) = event { return true }
            return false
        } }
        XCTAssertTrue(all.contains { event in
            if case .requirement(id: "username.available", state: .unmet, _) = event { return true }
            return false
        })
        let body = FormURLEncoder.encode([
            ("token", form.token), ("username", "ＬｉｖｅＳｉｇｎｕｐ"), ("email", "x@example.com"),
            ("password", "Quiet-Otter-742"), ("confirm", "Quiet-Otter-742"),
        ])
        let response = try await server.request("POST", "/signup", body: body)
        XCTAssertEqual(response.status, 422, "the service name, typed full-width, folds to a reserved name")
        XCTAssertTrue(response.body.contains("That username is taken"))
        XCTAssertEqual(try server.store.allAccounts().count, TestServer.takenUsernames.count)
    }

    func testALookAlikeUsernameIsRefusedLiveAndNeverLookedUp() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        _ = try await form.edit("username", to: "p\u{430}ypal", touched: true)
        let all = await events.wait { $0.contains { event in
            if case .message(field: "username", text: "Username can't mix letters from different alphabets, like Latin and Cyrillic", _) = event { return true }
            return false
        } }
        XCTAssertFalse(all.contains { event in
            if case .requirement(id: "username.available", state: .pending, _) = event { return true }
            return false
        }, "an unsafe name is not looked up")
    }
}
