import Foundation
import LiveSignupClient
import XCTest

/// The live protocol end to end: edits posted to `/fields` come back as events on `/events`.
final class EventStreamTests: XCTestCase {
    var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer()
    }

    override func tearDown() {
        server.stop()
    }

    private func isEmailFormat(_ event: SignupEvent) -> Bool {
        if case .requirement(id: "email.format", _, _) = event { return true }
        return false
    }

    func testStreamStartsWithSnapshotThenSendsExactlyTheChanges() async throws {
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        let first = await events.wait(forCount: 1)
        guard case .snapshot(let snapshot) = first[0] else { return XCTFail("first event must be a snapshot: \(first)") }
        XCTAssertEqual(snapshot.rev, 0)
        XCTAssertEqual(snapshot.requirements.count, 9)
        XCTAssertTrue(snapshot.requirements.values.allSatisfy { $0 == .unmet })
        XCTAssertEqual(snapshot.messages, ["username": "", "email": "", "password": "", "confirm": ""])
        XCTAssertFalse(snapshot.submitEnabled)

        let receipt = try await form.edit("password", to: "Abcdefgh")
        XCTAssertEqual(receipt, EditReceipt(rev: 1, applied: true))
        // A later edit with a known effect marks the end of the first edit's events.
        let marker = try await form.edit("email", to: "ada@example.com")
        XCTAssertEqual(marker.rev, 2)
        let all = await events.wait { $0.contains(where: self.isEmailFormat) }

        let policy = server.app.configuration.policy
        let strength = policy.passwordCandidate(password: "Abcdefgh", username: "", email: "").strength
        XCTAssertLessThan(strength.score, policy.settings.minimumStrengthScore, "a plain sequence is weak")
        XCTAssertFalse(strength.warning.isEmpty, "and says why")
        XCTAssertEqual(Array(all.dropFirst()), [
            .requirement(id: "password.length", state: .met, rev: 1),
            .requirement(id: "password.uppercase", state: .met, rev: 1),
            .requirement(id: "password.common", state: .met, rev: 1),
            .strength(LiveSignupClient.PasswordStrength(
                score: strength.score, label: strength.label, warning: strength.warning,
                suggestions: strength.suggestions), rev: 1),
            .requirement(id: "email.format", state: .met, rev: 2),
        ])
    }

    func testAnEditThatChangesNothingVisibleSendsNothing() async throws {
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        _ = try await form.edit("email", to: "not-an-email")  // still unmet, message hidden
        _ = try await form.edit("email", to: "still@bad")      // still unmet
        _ = try await form.edit("email", to: "ok@example.com")
        let all = await events.wait { $0.contains(where: self.isEmailFormat) }
        XCTAssertEqual(Array(all.dropFirst()), [.requirement(id: "email.format", state: .met, rev: 3)])
    }

    /// The server sets an input edit's value without reading the old one (a blur compares
    /// first): either way an edit that repeats the value changes nothing the stream shows,
    /// and only the blur shows the field's problem.
    func testAnEditRepeatingAFieldsValueSendsNothingAndItsBlurShowsTheProblemOnce() async throws {
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        _ = try await form.edit("email", to: "not-an-email")                 // rev 1: unmet, as it was
        _ = try await form.edit("email", to: "not-an-email")                 // rev 2: the same value
        _ = try await form.edit("email", to: "not-an-email", touched: true)  // rev 3: its problem shows
        _ = try await form.edit("email", to: "not-an-email", touched: true)  // rev 4: nothing new
        _ = try await form.edit("email", to: "ok@example.com")               // rev 5: the marker
        // The marker's two events: its requirement and its message (a wait for the first
        // alone could read the list between the two).
        let all = await events.wait { $0.contains(where: self.isEmailFormat) && $0.count >= 4 }
        guard all.count == 4, case .message(field: "email", let problem, rev: 3) = all[1] else {
            return XCTFail("expected the blur's message at rev 3, then the marker's events: \(all)")
        }
        XCTAssertFalse(problem.isEmpty)
        XCTAssertEqual(Array(all.dropFirst(2)), [.requirement(id: "email.format", state: .met, rev: 5),
                                                 .message(field: "email", text: "", rev: 5)])
    }

    func testTakenUsernameIsPendingThenUnmetWithMessageAfterLeavingTheField() async throws {
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        _ = try await form.edit("username", to: "alice")
        await events.wait { $0.contains(.requirement(id: "username.available", state: .unmet, rev: 1)) }
        XCTAssertEqual(Array(events.events.dropFirst()), [
            .requirement(id: "username.length", state: .met, rev: 1),
            .requirement(id: "username.charset", state: .met, rev: 1),
            .requirement(id: "username.available", state: .pending, rev: 1),
            .requirement(id: "username.available", state: .unmet, rev: 1),
        ])

        _ = try await form.edit("username", to: "alice", touched: true)
        await events.wait { $0.contains(.message(field: "username", text: "That username is taken", rev: 2)) }
    }

    func testFreeUsernameBecomesMetAndCaseInsensitiveMatchIsTaken() async throws {
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        _ = try await form.edit("username", to: "zoe_1")
        await events.wait { $0.contains(.requirement(id: "username.available", state: .met, rev: 1)) }
        _ = try await form.edit("username", to: "ALICE")
        await events.wait { $0.contains(.requirement(id: "username.available", state: .unmet, rev: 2)) }
    }

    func testSubmitEnablesExactlyWhenEveryRequirementIsMet() async throws {
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        _ = try await form.edit("username", to: "newperson")
        _ = try await form.edit("email", to: "new@example.com")
        _ = try await form.edit("password", to: "Correct-Horse-9")
        // The answer arrives after the later edits, so it carries the rev current by then.
        await events.wait { $0.contains { event in
            if case .requirement(id: "username.available", state: .met, _) = event { return true } else { return false }
        } }
        XCTAssertFalse(events.events.contains { if case .submit = $0 { return true } else { return false } },
                       "not enabled before the confirmation matches")
        _ = try await form.edit("confirm", to: "Correct-Horse-9")
        await events.wait { $0.contains(.submit(enabled: true, rev: 4)) }
        _ = try await form.edit("confirm", to: "Correct-Horse-")
        await events.wait { $0.contains(.submit(enabled: false, rev: 5)) }
    }

    func testMessagesAppearOnlyOnceTheFieldWasLeft() async throws {
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        _ = try await form.edit("password", to: "Abcdefgh")
        _ = try await form.edit("confirm", to: "Abc")
        _ = try await form.edit("email", to: "ok@example.com")
        await events.wait { $0.contains(where: self.isEmailFormat) }
        XCTAssertFalse(events.events.contains { if case .message = $0 { return true } else { return false } })

        _ = try await form.edit("confirm", to: "Abc", touched: true)
        await events.wait { $0.contains(.message(field: "confirm", text: "Passwords don't match", rev: 4)) }
        _ = try await form.edit("confirm", to: "Abcdefgh")
        await events.wait { $0.contains(.message(field: "confirm", text: "", rev: 5)) }
    }

    func testOutOfOrderEditCannotRollAFieldBack() async throws {
        let form = try await server.client.openForm()
        let newer = try await form.post(field: "password", value: "Abcdefgh", seq: 2)
        let older = try await form.post(field: "password", value: "a", seq: 1)
        XCTAssertEqual(newer, EditReceipt(rev: 1, applied: true))
        XCTAssertEqual(older, EditReceipt(rev: 1, applied: false))
        let same = try await form.post(field: "password", value: "b", seq: 2)
        XCTAssertFalse(same.applied, "a repeated seq is not newer")
        // Seqs are per field: seq 1 for another field still applies.
        let other = try await form.post(field: "confirm", value: "Abcdefgh", seq: 1)
        XCTAssertEqual(other, EditReceipt(rev: 2, applied: true))

        let events = EventCollector(form.events())
        let first = await events.wait(forCount: 1)
        guard case .snapshot(let snapshot) = first[0] else { return XCTFail("expected a snapshot") }
        XCTAssertEqual(snapshot.rev, 2)
        XCTAssertEqual(snapshot.requirements["password.length"], .met)
        XCTAssertEqual(snapshot.requirements["confirm.match"], .met)
    }

    func testReconnectResumesFromASnapshotOfTheCurrentState() async throws {
        let form = try await server.client.openForm()
        _ = try await form.edit("email", to: "ada@example.com", touched: true)
        _ = try await form.edit("password", to: "short", touched: true)
        let events = EventCollector(form.events())
        let first = await events.wait(forCount: 1)
        guard case .snapshot(let snapshot) = first[0] else { return XCTFail("expected a snapshot") }
        XCTAssertEqual(snapshot.rev, 2)
        XCTAssertEqual(snapshot.requirements["email.format"], .met)
        XCTAssertEqual(snapshot.requirements["password.length"], .unmet)
        XCTAssertEqual(snapshot.messages["password"], "Password must be at least 8 characters")
        XCTAssertEqual(snapshot.messages["email"], "")
    }

    func testTwoSessionsDoNotSeeEachOthersEdits() async throws {
        let mine = try await server.client.openForm()
        let theirs = try await server.client.openForm()
        let theirEvents = EventCollector(theirs.events())
        await theirEvents.wait(forCount: 1)
        _ = try await mine.edit("email", to: "me@example.com")
        _ = try await theirs.edit("password", to: "Abcdefgh")
        await theirEvents.wait { $0.contains(.requirement(id: "password.length", state: .met, rev: 1)) }
        XCTAssertFalse(theirEvents.events.contains(where: isEmailFormat))
    }

    func testPasswordsNeverLeaveTheServer() async throws {
        let secret = "Zebra-Quartz-77"
        let form = try await server.client.openForm()
        let raw = try await server.request(
            "POST", "/fields", body: "token=\(form.token)&field=password&value=\(secret)&seq=1&touched=1")
        XCTAssertFalse(raw.body.contains(secret))
        _ = try await form.edit("confirm", to: secret + "x", touched: true)
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        XCTAssertFalse(String(describing: events.events).contains(secret))
        XCTAssertFalse(String(describing: events.events).contains("Quartz"))
    }
}
