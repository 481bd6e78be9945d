import Foundation
import HTTPTestSupport
import LiveSignupClient
import OutsideMail
import SignupDomain
@testable import Identity
@testable import SignupServer
import WebAuthnTestSupport
import XCTest

/// What the black-box tests (Tests/Browser/test_email_verification.py, against aiosmtpd)
/// cannot do in seconds: time passing. Codes and holds expire on the server's clock, which
/// these tests move.
final class EmailVerificationTests: XCTestCase {
    private var server: TestServer!
    private let clock = TestClock()
    private let outbox = CapturedMail()

    override func setUpWithError() throws {
        server = try TestServer { [clock, outbox] configuration in
            configuration.clock = clock
            configuration.emailVerification = EmailVerificationSettings(
                mail: MailSettings(transport: outbox, from: "Tests <noreply@example.org>"))
        }
    }

    override func tearDown() {
        server.stop()
    }

    private func signUp(_ username: String, email: String) async throws -> String {
        let form = try await server.client.openForm()
        let password = "Cobol-Rocks-1959"
        let body = FormURLEncoder.encode([("token", form.token), ("username", username), ("email", email),
                                          ("password", password), ("confirm", password)])
        let response = try await server.request("POST", "/signup", body: body)
        XCTAssertEqual(response.status, 303, response.body)
        XCTAssertEqual(response.headers["location"], "/verify?token=\(form.token)")
        return form.token
    }

    private func code(for address: String) async throws -> String {
        let outbox = outbox
        let sent = await Condition.wait(timeout: 10) { outbox.messages(to: address).count == 1 }
        XCTAssertTrue(sent, "the mail went out")
        let text = try XCTUnwrap(outbox.messages(to: address).last?.text)
        return try XCTUnwrap(text.firstMatch(of: #/\n\s+(\d{6})\n/#)).1.description
    }

    /// A passkey made on the form waits with the pending sign-up, and arrives with the
    /// account once the address is proved.
    func testAPasskeySignUpProvesItsAddressFirst() async throws {
        let form = try await server.client.openForm()
        _ = try await form.edit("username", to: "keyed_ada")
        _ = try await form.edit("credential", to: "passkey")
        let options = try await server.request("POST", "/passkeys/options?token=\(form.token)",
                                                body: FormURLEncoder.encode([("token", form.token)]))
        XCTAssertEqual(options.status, 200, options.body)
        let authenticator = SoftwareAuthenticator()
        let registration = try authenticator.register(options: options.body, origin: server.baseURL.absoluteString
            .trimmingCharacters(in: CharacterSet(charactersIn: "/")))
        let made = try await server.request("POST", "/passkeys/register?token=\(form.token)",
                                            body: FormURLEncoder.encode([("token", form.token), ("response", registration)]),
                                            headers: ["Cookie": PasskeyServerTests.browserCookie(options.headers) ?? ""])
        XCTAssertEqual(made.status, 201, made.body)
        let pending = try await server.request("POST", "/signup", body: FormURLEncoder.encode([
            ("token", form.token), ("username", "keyed_ada"), ("email", "keyed@example.org"), ("credential", "passkey"),
        ]))
        XCTAssertEqual(pending.headers["location"], "/verify?token=\(form.token)", pending.body)
        XCTAssertNil(try server.store.passkey(credentialID: authenticator.credentialID), "not before the proof")

        let proved = try await server.request("POST", "/verify", body: FormURLEncoder.encode(
            [("token", form.token), ("code", try await code(for: "keyed@example.org"))]))
        XCTAssertEqual(proved.status, 303)
        let account = try XCTUnwrap(try server.store.account(named: "keyed_ada"))
        XCTAssertEqual(account.passwordHash, Account.unusablePasswordHash)
        XCTAssertNotNil(account.emailVerifiedAt)
        XCTAssertEqual(try server.store.passkeys(ofAccount: account.id).map(\.credentialID), [authenticator.credentialID])
    }

    /// A proved address is handed to the application behind `/auth`, marked as proved.
    func testAuthHandsOnAProvedAddressMarkedVerified() async throws {
        let token = try await signUp("Proved_Ada", email: "proved@example.org")
        let proved = try await server.request("POST", "/verify", body: FormURLEncoder.encode(
            [("token", token), ("code", try await code(for: "proved@example.org"))]))
        XCTAssertEqual(proved.status, 303)
        let cookie = try XCTUnwrap(proved.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let auth = try await server.request("GET", "/auth", headers: ["Cookie": cookie])
        XCTAssertEqual(auth.status, 200)
        XCTAssertEqual(auth.headers["x-auth-request-email"], "proved@example.org")
        XCTAssertEqual(auth.headers["x-auth-request-email-verified"], "true")
    }

    func testACodeExpiresWithItsHoldAndTheNameIsFreeAgain() async throws {
        let token = try await signUp("Lovelace", email: "ada@example.org")
        let adaCode = try await code(for: "ada@example.org")
        XCTAssertTrue(try server.store.isUsernameTaken("lovelace", at: clock.now), "held while the code lives")

        clock.advance(by: 30 * 60)
        let late = try await server.request("POST", "/verify", body: FormURLEncoder.encode([("token", token), ("code", adaCode)]))
        XCTAssertEqual(late.status, 410, "the right code, too late")
        XCTAssertTrue(late.body.contains("verification_expired"))
        XCTAssertNil(try server.store.account(named: "lovelace"))
        XCTAssertFalse(try server.store.isUsernameTaken("lovelace", at: clock.now), "released at expiry")

        // Someone else may now take the name, and does.
        let other = try await signUp("lovelace", email: "other@example.org")
        let otherCode = try await code(for: "other@example.org")
        let proved = try await server.request("POST", "/verify", body: FormURLEncoder.encode([("token", other), ("code", otherCode)]))
        XCTAssertEqual(proved.status, 303)
        XCTAssertEqual(try server.store.account(named: "Lovelace")?.email, "other@example.org")
    }

    func testANewCodeWaitsForTheCooldownAndReplacesTheOldOne() async throws {
        let token = try await signUp("Hopper", email: "grace@example.org")
        let first = try await code(for: "grace@example.org")
        let resend = FormURLEncoder.encode([("token", token)])

        clock.advance(by: 59)
        let early = try await server.request("POST", "/verify/resend", body: resend)
        XCTAssertEqual(early.status, 429)
        XCTAssertEqual(early.headers["retry-after"], "1")
        XCTAssertTrue(early.body.contains("A new code can be sent in"))
        XCTAssertEqual(outbox.messages(to: "grace@example.org").count, 1, "nothing sent")

        clock.advance(by: 1)
        let sent = try await server.request("POST", "/verify/resend", body: resend)
        XCTAssertEqual(sent.status, 303)
        XCTAssertEqual(sent.headers["location"], "/verify?token=\(token)&sent=1")
        let outbox = outbox
        let arrived = await Condition.wait(timeout: 10) { outbox.messages(to: "grace@example.org").count == 2 }
        XCTAssertTrue(arrived)
        let second = try XCTUnwrap(outbox.messages(to: "grace@example.org").last?.text.firstMatch(of: #/\n\s+(\d{6})\n/#)).1
        if second != first {
            let old = try await server.request("POST", "/verify", body: FormURLEncoder.encode([("token", token), ("code", first)]))
            XCTAssertEqual(old.status, 422, "the old code stopped working")
        }
        let proved = try await server.request("POST", "/verify",
                                              body: FormURLEncoder.encode([("token", token), ("code", String(second))]))
        XCTAssertEqual(proved.status, 303)
    }

    func testAMailWhoseCodeExpiredBeforeTheServerTookItIsNotSent() async throws {
        let outbox = outbox, store = server.store
        outbox.refuseEverything = true
        _ = try await signUp("Patient", email: "patient@example.org")
        let tried = await Condition.wait(timeout: 10) { outbox.attempts >= 1 }
        XCTAssertTrue(tried, "tried while the server refuses")
        clock.advance(by: 31 * 60)
        outbox.refuseEverything = false
        // The retry is due on the moved clock at once (the next poll, within a second).
        let parked = await Condition.wait(timeout: 20) { (try? store.outboxStatus(channel: .mail).parked) == 1 }
        XCTAssertTrue(parked, "parked: its code no longer works")
        XCTAssertEqual(outbox.messages(to: "patient@example.org").count, 0)
    }
}

/// A mail transport that keeps what it is given (or refuses, as a mail server that is down).
final class CapturedMail: MailTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var sent: [MailMessage] = []
    private var tries = 0
    private var refusing = false

    var refuseEverything: Bool {
        get { lock.withLock { refusing } }
        set { lock.withLock { refusing = newValue } }
    }

    var attempts: Int { lock.withLock { tries } }

    func messages(to address: String) -> [MailMessage] {
        lock.withLock { sent.filter { $0.to == address } }
    }

    func send(_ message: MailMessage) throws(MailFailure) {
        let refused = lock.withLock { () -> Bool in
            tries += 1
            if refusing { return true }
            sent.append(message)
            return false
        }
        if refused { throw MailFailure("421 try again later") }
    }
}

/// After a wrong code from a client, its next code pays a proof of work (as sign-in does
/// after failures): a guesser pays for every guess, a person's page pays it unseen.
final class VerificationProofOfWorkTests: XCTestCase {
    private var server: TestServer!
    private let outbox = CapturedMail()

    override func setUpWithError() throws {
        server = try TestServer { [outbox] configuration in
            configuration.emailVerification = EmailVerificationSettings(
                mail: MailSettings(transport: outbox, from: "Tests <noreply@example.org>"))
            configuration.askCheapProofs()
        }
    }

    override func tearDown() {
        server.stop()
    }

    func testAfterAWrongCodeTheNextCodePaysAProof() async throws {
        let form = try await server.client.openForm()
        let password = "Cobol-Rocks-1959"
        let signup = try await server.request("POST", "/signup", body: FormURLEncoder.encode([
            ("token", form.token), ("username", "proving_ada"), ("email", "proving@example.org"),
            ("password", password), ("confirm", password), ("altcha", try await form.proofOfWork())]))
        XCTAssertEqual(signup.status, 303, signup.body)
        let outbox = outbox
        let sent = await Condition.wait(timeout: 10) { outbox.messages(to: "proving@example.org").count == 1 }
        XCTAssertTrue(sent)
        let code = try XCTUnwrap(outbox.messages(to: "proving@example.org").last?.text.firstMatch(of: #/\n\s+(\d{6})\n/#)).1.description
        let page = try await server.request("GET", "/verify?token=\(form.token)")
        XCTAssertFalse(page.body.contains("data-challenge"), "nothing to pay before a failure")

        let wrong = String(code.reversed()) == code ? "000000" : String(code.reversed())
        let failed = try await server.request("POST", "/verify", body: FormURLEncoder.encode([("token", form.token), ("code", wrong)]))
        XCTAssertEqual(failed.status, 422)
        XCTAssertTrue(failed.body.contains("data-challenge=\""), "the page that says so carries a challenge")
        XCTAssertTrue(failed.body.contains("/static/proof.js"))

        let garbage = try await server.request("POST", "/verify", body: FormURLEncoder.encode([
            ("token", form.token), ("code", code), ("altcha", "!!!")]))
        XCTAssertEqual(garbage.status, 400, "a broken proof is refused before the code is compared")
        let asProgram = try await server.request("POST", "/verify", body: FormURLEncoder.encode([
            ("token", form.token), ("code", code), ("altcha", "!!!")]), headers: ["Accept": "application/json"])
        XCTAssertEqual(asProgram.status, 400)
        let body = try JSONDecoder().decode(ErrorBody.self, from: Data(asProgram.body.utf8))
        XCTAssertEqual(body.error, "proof_refused")
        XCTAssertEqual(body.reason, "malformed")
        XCTAssertNil(try server.store.account(named: "proving_ada"))
        let proof = try await FormSession(client: server.client, token: form.token).proofOfWork()
        let proved = try await server.request("POST", "/verify", body: FormURLEncoder.encode([
            ("token", form.token), ("code", code), ("altcha", proof)]))
        XCTAssertEqual(proved.status, 303, proved.body)
        XCTAssertNotNil(try server.store.account(named: "proving_ada"))
    }
}
