import Clocks
import Foundation
import HTTPTestSupport
import Identity
import LiveSignupClient
import OutsideMail
import SignupDomain
import WebKernel
@testable import SignupServer
import XCTest

/// Issue 59: the sign-up funnel, counted by each form as it lives and when it ends, on the
/// app's clock (virtual here, so times and idle lifetimes are exact), read as `/metrics`
/// renders it and as the store sums it.
final class FunnelTests: XCTestCase {
    private let clock = TestClock()

    /// Every sample of the funnel's Prometheus text, by its line's name and labels.
    private func samples(_ server: TestServer) -> [String: Double] { Self.samples(server.app.services.form.funnel) }

    private static func samples(_ funnel: FormFunnel) -> [String: Double] {
        var text: [UInt8] = []
        funnel.renderPrometheus(into: &text)
        var samples: [String: Double] = [:]
        for line in String(decoding: text, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            samples[String(parts[0])] = Double(parts[1])
        }
        return samples
    }

    private func labels(_ detail: String? = nil, language: String = "en", credential: String = "password",
                        javascript: Bool) -> String {
        (detail.map { $0 + "," } ?? "") + "language=\"\(language)\",credential=\"\(credential)\",javascript=\"\(javascript ? "yes" : "no")\""
    }

    private func post(_ server: TestServer, token: String, username: String, email: String, password: String,
                      confirm: String, expecting status: Int, file: StaticString = #filePath, line: UInt = #line) async throws {
        let response = try await server.request("POST", "/signup", body: FormURLEncoder.encode(
            [("token", token), ("username", username), ("email", email), ("password", password), ("confirm", confirm)]))
        XCTAssertEqual(response.status, status, response.body, file: file, line: line)
    }

    func testEachFormIsCountedOnceAndTheAbandonedOnesSayWhatStoppedThem() async throws {
        let server = try TestServer { [clock] in
            $0.clock = clock
            $0.sessionIdleLifetime = 30 * 60
        }
        defer { server.stop() }

        // Live, left at the password's rules.
        let left = try await server.client.openForm()
        _ = try await left.edit("username", to: "left_at_rules")
        clock.advance(by: 12)
        _ = try await left.edit("password", to: "short")
        // Live, finished: its password meets the length rule 40 s after its first edit.
        let done = try await server.client.openForm()
        _ = try await done.edit("username", to: "finisher")
        clock.advance(by: 40)
        _ = try await done.edit("email", to: "fin@example.com")
        _ = try await done.edit("password", to: "Correct-Horse-9")
        _ = try await done.edit("confirm", to: "Correct-Horse-9")
        // The live username look-ups run when their turn comes on the app's clock (the address's
        // allowance paces them): moved on until both answered, before the posts spend it too.
        let funnel = server.app.services.form.funnel, clock = clock
        let available = "livesignup_form_requirement_met_seconds_count{\(labels("requirement=\"username.available\"", javascript: true))}"
        let looked = await Condition.wait(timeout: 10) {
            clock.advance(by: 1)
            return Self.samples(funnel)[available] == 2
        }
        XCTAssertTrue(looked, "both live forms met username.available")
        try await post(server, token: done.token, username: "finisher", email: "fin@example.com",
                                      password: "Correct-Horse-9", confirm: "Correct-Horse-9", expecting: 303)
        // Without JavaScript: refused once (the confirmation differs), then made.
        let plain = try await server.client.openForm()
        try await post(server, token: plain.token, username: "plain_person", email: "plain@example.com",
                                      password: "Correct-Horse-9", confirm: "Correct-Horse-8", expecting: 422)
        clock.advance(by: 30)
        try await post(server, token: plain.token, username: "plain_person", email: "plain@example.com",
                                      password: "Correct-Horse-9", confirm: "Correct-Horse-9", expecting: 303)
        // Posted again (the back button): the same form, refused as used, not a new one begun.
        try await post(server, token: plain.token, username: "plain_person", email: "plain@example.com",
                       password: "Correct-Horse-9", confirm: "Correct-Horse-9", expecting: 409)
        // Without JavaScript, refused, never back.
        let gone = try await server.client.openForm()
        try await post(server, token: gone.token, username: "gone_person", email: "gone@example.com",
                                      password: "Correct-Horse-9", confirm: "nope", expecting: 422)
        // A post naming no form of this server's: refused, counted, but no form started.
        try await post(server, token: "made-up", username: "x_person", email: "x@example.com",
                                      password: "Correct-Horse-9", confirm: "Correct-Horse-9", expecting: 422)

        XCTAssertNil(samples(server)["livesignup_form_abandoned_total{\(labels(javascript: true))}"], "nothing ended yet")

        // Past the idle lifetime the sweep drops the forms nobody uses.
        clock.advance(by: 31 * 60)
        let counted = samples(server)
        func value(_ name: String, _ detail: String? = nil, credential: String = "password", javascript: Bool) -> Double? {
            counted["livesignup_form_\(name){\(labels(detail, credential: credential, javascript: javascript))}"]
        }
        XCTAssertEqual(value("started_total", javascript: true), 2)
        XCTAssertEqual(value("started_total", javascript: false), 2, "the made-up token started nothing")
        XCTAssertEqual(value("first_edits_total", javascript: true), 2)
        XCTAssertEqual(value("first_edits_total", javascript: false), 2)
        XCTAssertEqual(value("completed_total", javascript: true), 1)
        XCTAssertEqual(value("completed_total", javascript: false), 1)
        XCTAssertEqual(value("abandoned_total", javascript: true), 1, "the finished form is not abandoned")
        XCTAssertEqual(value("abandoned_total", javascript: false), 1)
        XCTAssertEqual(value("submits_refused_total", "reason=\"invalid\"", javascript: false), 3)
        XCTAssertEqual(value("submits_refused_total", "reason=\"already_used\"", javascript: false), 1)
        // What stopped them: the live one's password rules, the plain one's confirmation.
        XCTAssertEqual(value("abandoned_unmet_total", "requirement=\"password.length\"", javascript: true), 1)
        XCTAssertNil(value("abandoned_unmet_total", "requirement=\"username.length\"", javascript: true), "met, so not what stopped it")
        XCTAssertEqual(value("abandoned_unmet_total", "requirement=\"confirm.match\"", javascript: false), 1)
        XCTAssertNil(value("abandoned_unmet_total", "requirement=\"password.length\"", javascript: false))
        // The finished form's password length: 40 s after its first edit, in the 60 s bucket.
        let length = "requirement=\"password.length\""
        XCTAssertEqual(value("requirement_met_seconds_count", length, javascript: true), 1)
        XCTAssertEqual(value("requirement_met_seconds_sum", length, javascript: true), 40)
        XCTAssertEqual(counted["livesignup_form_requirement_met_seconds_bucket{\(labels(length, javascript: true)),le=\"30\"}"], 0)
        XCTAssertEqual(counted["livesignup_form_requirement_met_seconds_bucket{\(labels(length, javascript: true)),le=\"60\"}"], 1)
        // The plain form's account, 30 s after its page (here: its token) was served.
        XCTAssertEqual(value("completion_seconds_sum", javascript: false), 30)

        // The same counts in the store, once; a second flush adds nothing.
        try funnel.flush(to: server.store, at: clock.now)
        try funnel.flush(to: server.store, at: clock.now)
        let report = FunnelReport(try server.store.funnelCounts(since: .distantPast), since: .distantPast)
        XCTAssertEqual(report.totals, ["started": 4, "first_edits": 4, "completed": 2, "abandoned": 2])
        XCTAssertEqual(report.refused, ["invalid": 3, "already_used": 1])
        XCTAssertEqual(report.abandonedUnmet["password.length"], 1)
        XCTAssertEqual(report.abandonedUnmet["confirm.match"], 2, "both: the live one never confirmed either")
        XCTAssertEqual(report.by["javascript"]?["no"], FunnelReport.Share(started: 2, completed: 1, abandoned: 1))
        XCTAssertEqual(report.requirementsMet["password.length"]?.forms, 1)
        XCTAssertEqual(report.requirementsMet["password.length"]?.medianAtMostSeconds, 60)

        // Nothing about any one person: no name, address or value typed, anywhere.
        var text: [UInt8] = []
        funnel.renderPrometheus(into: &text)
        let stored = try server.store.funnelCounts(since: .distantPast).map { "\($0.series)" }.joined()
        for typed in ["left_at_rules", "finisher", "fin@example.com", "plain_person", "gone@example.com", "Correct-Horse", "short"] {
            XCTAssertFalse(String(decoding: text, as: UTF8.self).contains(typed), typed)
            XCTAssertFalse(stored.contains(typed), typed)
        }
    }

    /// A code mailed is a step, not an abandonment: the form that waits for it is not counted
    /// as abandoned when its session goes, and the proof completes it, by what the waiting
    /// sign-up kept (JavaScript or not), as the instance that proves it may not be the one
    /// that had the form.
    func testAnAddressProofIsAStepAndItsProofCompletesTheForm() async throws {
        let outbox = CapturedMail()
        let server = try TestServer { [clock] in
            $0.clock = clock
            $0.sessionIdleLifetime = 10 * 60
            $0.emailVerification = EmailVerificationSettings(mail: MailSettings(transport: outbox, from: "Tests <noreply@example.org>"))
        }
        defer { server.stop() }
        let form = try await server.client.openForm()
        _ = try await form.edit("username", to: "proving_ada")
        try await post(server, token: form.token, username: "proving_ada", email: "prove@example.org",
                                      password: "Cobol-Rocks-1959", confirm: "Cobol-Rocks-1959", expecting: 303)
        let sent = await Condition.wait(timeout: 10) { outbox.messages(to: "prove@example.org").count == 1 }
        XCTAssertTrue(sent)
        let code = try XCTUnwrap(outbox.messages(to: "prove@example.org").last?.text.firstMatch(of: #/\n\s+(\d{6})\n/#)).1
        clock.advance(by: 11 * 60)   // the form's session goes meanwhile (the code lasts longer)
        XCTAssertEqual(server.app.sessionCount, 0)
        let steps = "step=\"address_proof\""
        var counted = samples(server)
        XCTAssertEqual(counted["livesignup_form_steps_entered_total{\(labels(steps, javascript: true))}"], 1)
        XCTAssertNil(counted["livesignup_form_abandoned_total{\(labels(javascript: true))}"], "waiting is not abandoning")
        XCTAssertNil(counted["livesignup_form_completed_total{\(labels(javascript: true))}"])

        let proved = try await server.request("POST", "/verify", body: FormURLEncoder.encode([("token", form.token), ("code", String(code))]))
        XCTAssertEqual(proved.status, 303, proved.body)
        counted = samples(server)
        XCTAssertEqual(counted["livesignup_form_steps_finished_total{\(labels(steps, javascript: true))}"], 1)
        XCTAssertEqual(counted["livesignup_form_completed_total{\(labels(javascript: true))}"], 1)
        XCTAssertNil(counted["livesignup_form_completed_total{\(labels(javascript: false))}"])
        XCTAssertEqual(counted["livesignup_form_completion_seconds_sum{\(labels(javascript: true))}"], 11 * 60)
    }

    /// Posts past the address's sign-up limit are refused and counted as refused, but begin no
    /// form: a flood of them (each with a fresh genuine token) leaves the table of forms without
    /// JavaScript as it was, and makes up no abandoned form when the table would be full.
    func testPostsOverTheLimitBeginNoForm() async throws {
        let server = try TestServer { [clock] in
            $0.clock = clock
            $0.limits.signupsPerAddress = Rate(burst: 1, perSecond: 1.0 / 3600)
            $0.maximumSessions = 2
        }
        defer { server.stop() }
        let first = try await server.client.openForm()
        try await post(server, token: first.token, username: "first_one", email: "first@example.com",
                       password: "Correct-Horse-9", confirm: "nope", expecting: 422)
        for index in 0..<5 {
            let form = try await server.client.openForm()
            try await post(server, token: form.token, username: "flood_\(index)", email: "flood\(index)@example.com",
                           password: "Correct-Horse-9", confirm: "Correct-Horse-9", expecting: 429)
        }
        let counted = samples(server)
        XCTAssertEqual(counted["livesignup_form_started_total{\(labels(javascript: false))}"], 1, "only the one within the limit")
        XCTAssertEqual(counted["livesignup_form_submits_refused_total{\(labels("reason=\"rate_limited\"", javascript: false))}"], 5)
        XCTAssertNil(counted["livesignup_form_abandoned_total{\(labels(javascript: false))}"], "nothing pushed out")
    }

    /// A stop flushes what was counted since the last flush: a restart loses nothing (here no
    /// periodic flush ever ran: the virtual clock never reached it).
    func testAStopFlushesWhatWasCounted() async throws {
        let server = try TestServer { [clock] in $0.clock = clock }
        let store = server.store
        let form = try await server.client.openForm()
        _ = try await form.edit("username", to: "stopping")
        XCTAssertEqual(try store.funnelCounts(since: .distantPast), [], "nothing flushed yet")
        server.app.stop()
        let report = FunnelReport(try store.funnelCounts(since: .distantPast), since: .distantPast)
        XCTAssertEqual(report.totals["started"], 1)
        XCTAssertEqual(report.totals["first_edits"], 1)
        try? FileManager.default.removeItem(at: server.databaseDirectory)
    }

    /// A store that fails keeps the counts for the next flush: nothing lost, nothing twice.
    func testAFailedFlushIsCarriedByTheNext() async throws {
        let server = try TestServer { [clock] in $0.clock = clock }
        defer { server.stop() }
        let funnel = server.app.services.form.funnel
        let form = try await server.client.openForm()
        _ = try await form.edit("username", to: "flusher")
        let refusing = RefusingFunnelStore()
        XCTAssertThrowsError(try funnel.flush(to: refusing, at: clock.now))
        try funnel.flush(to: server.store, at: clock.now)
        XCTAssertEqual(FunnelReport(try server.store.funnelCounts(since: .distantPast), since: .distantPast).totals["started"], 1)
        try funnel.flush(to: server.store, at: clock.now)
        XCTAssertEqual(FunnelReport(try server.store.funnelCounts(since: .distantPast), since: .distantPast).totals["started"], 1)
    }
}

/// A store whose funnel writes fail, as a database that went away.
private struct RefusingFunnelStore: FunnelCounts {
    struct Down: Error {}
    func addFunnelCounts(_ counts: [FunnelCount], period: Date) throws { throw Down() }
    func funnelCounts(since: Date) throws -> [FunnelCount] { throw Down() }
    func removeFunnelCounts(before date: Date) throws -> Int { throw Down() }
}
