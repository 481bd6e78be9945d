import Foundation
import HTTPTestSupport
import LiveSignupClient
import OutsideMail
import SignupDomain
@testable import Identity
@testable import SignupServer
import WebAuthn
import XCTest

/// Issue 43: what a signed-in person changes on `/account`, each behind a recent sign-in, each
/// told to the owner (a mail at the proved address) and to the product (a webhook in the same
/// transaction), none touching another account.
final class AccountChangeTests: XCTestCase {
    private var server: TestServer!
    private let clock = TestClock()
    private let mail = CapturedMail()
    private let password = "Changing-Things-1971"
    private let hasher = Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024)

    override func setUpWithError() throws {
        server = try TestServer { [clock, mail] configuration in
            configuration.clock = clock
            configuration.emailVerification = EmailVerificationSettings(
                mail: MailSettings(transport: mail, from: "Tests <noreply@example.org>"))
            // Nobody listens there: the events wait in the outbox, where the test reads them.
            configuration.webhooks = WebhookSettings(url: URL(string: "http://127.0.0.1:9/hooks")!,
                                                     secret: WebhookSecret(key: Array(repeating: 7, count: 24)))
        }
    }

    override func tearDown() {
        server.stop()
    }

    // MARK: Helpers

    /// An account with a proved address (and a password unless `passwordless`), made the
    /// store's way for a sign-up whose address was proved.
    @discardableResult
    private func account(_ username: String, passwordless: Bool = false) throws -> Account {
        let token = "\(username)-form"
        let pending = PendingSignup.starting(
            formToken: token, username: username, email: "\(username.lowercased())@example.org",
            passwordHash: passwordless ? Account.unusablePasswordHash : try hasher.hash(password), profile: [:], language: "en",
            returnTo: "", codeHash: "unused", linkHash: "unused-\(username)", at: clock.now, lifetime: 600)
        try server.store.startPendingSignup(pending, mail: OutboxEvent(id: OutboxEvent.makeID(), type: "mail.test", body: "",
                                                                      createdAt: clock.now, channel: .mail), at: clock.now)
        return try XCTUnwrap(try server.store.completePendingSignup(formToken: token, at: clock.now, announce: false))
    }

    private func signIn(_ username: String, _ password: String? = nil) async throws -> (status: Int, cookie: String?) {
        let response = try await server.request("POST", "/signin", body: FormURLEncoder.encode([
            ("username", username), ("password", password ?? self.password),
        ]))
        let cookie = response.headers["set-cookie"]?.components(separatedBy: ", ")
            .first { $0.hasPrefix(SignedInUsers.plainCookieName + "=") && !$0.hasPrefix(SignedInUsers.plainCookieName + "=;") }?
            .split(separator: ";").first.map(String.init)
        return (response.status, cookie)
    }

    private func signedIn(_ username: String) async throws -> String {
        let answer = try await signIn(username)
        XCTAssertEqual(answer.status, 303)
        return try XCTUnwrap(answer.cookie)
    }

    private func auth(_ cookie: String) async throws -> Int {
        try await server.request("GET", "/auth", headers: ["Cookie": cookie]).status
    }

    private func post(_ path: String, _ fields: [(String, String)], cookie: String,
                      headers: [String: String] = [:]) async throws -> (status: Int, headers: [String: String], body: String) {
        var all = headers
        all["Cookie"] = cookie
        return try await server.request("POST", path, body: FormURLEncoder.encode(fields), headers: all)
    }

    /// The webhook types waiting in the outbox (nobody receives them in these tests).
    private func webhooks() throws -> [String] {
        try server.store.claimDueEvents(channel: .webhook, at: clock.now.addingTimeInterval(86_400 * 2), limit: 100, lease: 1)
            .map(\.event.type).sorted()
    }

    /// Mails delivered to `address`, once `count` arrived.
    private func mails(to address: String, count: Int) async throws -> [MailMessage] {
        let mail = mail
        let arrived = await Condition.wait(timeout: 10) { mail.messages(to: address).count >= count }
        XCTAssertTrue(arrived, "\(count) mails to \(address) (has \(mail.messages(to: address).count))")
        return mail.messages(to: address)
    }

    // MARK: A recent sign-in

    /// A sign-in older than `--recent-signin-minutes` opens nothing: pages go to `/account`,
    /// which asks for the password and then continues to the change; JSON says so in its
    /// words; a stale cookie adds no passkey.
    func testAStaleSignInConfirmsFirstThenContinues() async throws {
        try account("Stale")
        let cookie = try await signedIn("stale")
        clock.advance(by: 6 * 60)

        let page = try await server.request("GET", "/account/password", headers: ["Cookie": cookie])
        XCTAssertEqual(page.status, 303)
        XCTAssertEqual(page.headers["location"], "/account?continue=password")
        let asks = try await server.request("GET", "/account?continue=password", headers: ["Cookie": cookie])
        XCTAssertTrue(asks.body.contains("to continue: this change needs a recent sign-in"), asks.body)
        XCTAssertTrue(asks.body.contains(#"name="continue" value="password""#))

        let options = try await post("/account/passkeys/options", [("mediation", "button")], cookie: cookie)
        XCTAssertEqual(options.status, 403)
        XCTAssertTrue(options.body.contains("\"recent_signin_required\""), options.body)
        let export = try await server.request("GET", "/account/export", headers: ["Cookie": cookie])
        XCTAssertEqual(export.headers["location"], "/account?continue=export")
        let deleted = try await post("/account/delete", [("confirm_username", "Stale")], cookie: cookie)
        XCTAssertEqual(deleted.status, 303)
        XCTAssertNotNil(try server.store.account(named: "Stale"), "nothing deleted without a recent sign-in")

        let confirmed = try await post("/account/confirm", [("password", password), ("continue", "password")], cookie: cookie)
        XCTAssertEqual(confirmed.status, 303, confirmed.body)
        XCTAssertEqual(confirmed.headers["location"], "/account/password")
        let opened = try await server.request("GET", "/account/password", headers: ["Cookie": cookie])
        XCTAssertEqual(opened.status, 200)
        XCTAssertTrue(opened.body.contains(#"name="current_password""#))
        XCTAssertTrue(opened.body.contains(#"data-session-url="/account/password/session""#))

        // Anything else named as the continuation leads to the account page.
        clock.advance(by: 6 * 60)
        let odd = try await post("/account/confirm", [("password", password), ("continue", "https://evil.example/")], cookie: cookie)
        XCTAssertEqual(odd.headers["location"], "/account?confirmed=1")
    }

    // MARK: The password

    /// A fresh live session for the new-password form (its page's script asks when the old
    /// one was dropped) is refused as the sign-up form's is: the per-address sessions limit
    /// spent is a 429 naming the limit, with `Retry-After`, not a vague 503.
    func testAFreshFormSessionOverTheSessionsLimitIsA429() async throws {
        server.stop()
        server = try TestServer { [clock, mail] configuration in
            configuration.clock = clock
            configuration.emailVerification = EmailVerificationSettings(
                mail: MailSettings(transport: mail, from: "Tests <noreply@example.org>"))
            configuration.limits.newSessionsPerAddress = .per(minute: 1, burst: 3)
        }
        try account("Renewer")
        let cookie = try await signedIn("Renewer")
        var statuses: [Int] = []
        var refused: (status: Int, headers: [String: String], body: String)?
        for _ in 0..<5 where refused == nil {
            let answer = try await post("/account/password/session", [], cookie: cookie)
            statuses.append(answer.status)
            if answer.status != 201 { refused = answer }
        }
        XCTAssertEqual(statuses.first, 201, "the first fresh session is made")
        let answer = try XCTUnwrap(refused, "the limit is reached within five")
        XCTAssertEqual(answer.status, 429, answer.body)
        XCTAssertTrue(answer.body.contains(#""rate_limited""#), answer.body)
        XCTAssertNotNil(answer.headers["retry-after"])
    }

    func testANewPasswordEndsEveryOtherSessionAndTellsTheOwner() async throws {
        let owner = try account("Mover")
        try account("Neighbour")
        let here = try await signedIn("mover")
        let there = try await signedIn("mover")
        let control = try await signedIn("neighbour")
        XCTAssertNotNil(owner.emailVerifiedAt, "told only at a proved address")

        // The form: the live checklist of the sign-up form, the current password asked.
        let page = try await server.request("GET", "/account/password", headers: ["Cookie": here])
        XCTAssertTrue(page.body.contains("password.not_current"), "checked live: not the current one")
        XCTAssertTrue(page.body.contains("password.personal"))

        let wrong = try await post("/account/password", [("current_password", "not-it"), ("password", "Brand-New-Words-1984"),
                                                         ("confirm", "Brand-New-Words-1984")], cookie: here)
        XCTAssertEqual(wrong.status, 401)
        XCTAssertTrue(wrong.body.contains("The current password is incorrect"), wrong.body)
        let same = try await post("/account/password", [("current_password", password), ("password", password),
                                                        ("confirm", password)], cookie: here)
        XCTAssertEqual(same.status, 422, "the current password again is refused")
        let named = try await post("/account/password", [("current_password", password), ("password", "mover-Mover-1984!"),
                                                         ("confirm", "mover-Mover-1984!")], cookie: here)
        XCTAssertEqual(named.status, 422, "built on the username")
        var thereStatus = try await auth(there)
        XCTAssertEqual(thereStatus, 200, "a refused change ends nothing")

        let changed = try await post("/account/password", [("current_password", password), ("password", "Brand-New-Words-1984"),
                                                           ("confirm", "Brand-New-Words-1984")], cookie: here)
        XCTAssertEqual(changed.status, 303, changed.body)
        XCTAssertEqual(changed.headers["location"], "/account?password=changed&others=1")
        thereStatus = try await auth(there)
        XCTAssertEqual(thereStatus, 401, "the other browser is signed out at once")
        let hereStatus = try await auth(here)
        XCTAssertEqual(hereStatus, 200, "this one stays")
        let controlStatus = try await auth(control)
        XCTAssertEqual(controlStatus, 200, "another account is untouched")
        let old = try await signIn("mover")
        XCTAssertEqual(old.status, 401)
        let new = try await signIn("mover", "Brand-New-Words-1984")
        XCTAssertEqual(new.status, 303)

        let notices = try await mails(to: "mover@example.org", count: 1)
        XCTAssertEqual(notices.last?.subject, "Your \u{2068}LiveSignup\u{2069} password was changed", "the name isolated for direction")
        XCTAssertTrue(notices.last?.text.contains("changed on its account page") == true)
        XCTAssertFalse(notices.last?.text.contains("Brand-New") == true, "never the password")
        XCTAssertEqual(try webhooks(), ["account.password_changed"])
    }

    // MARK: Passkeys

    func testPasskeysAreRenamedAndRemovedButNeverTheLastWayIn() async throws {
        let owner = try account("Keyholder")
        let keyOnly = try account("Keyonly", passwordless: true)
        func key(_ id: UInt8, _ account: Account) throws {
            try server.store.addPasskey(Passkey(credentialID: [id, id], accountID: account.id, publicKey: [0xA5], algorithm: -7,
                                                signCount: 0, transports: ["internal"], isBackupEligible: true,
                                                isBackedUp: id == 1, createdAt: clock.now))
        }
        try key(1, owner)
        try key(2, keyOnly)
        let cookie = try await signedIn("keyholder")
        let page = try await server.request("GET", "/account", headers: ["Cookie": cookie])
        XCTAssertTrue(page.body.contains("Passkey 1"), "an unnamed one is numbered")
        XCTAssertTrue(page.body.contains("synced to your other devices"))
        let handle = Base64URL.encode([1, 1]), foreign = Base64URL.encode([2, 2])

        let renamed = try await post("/account/passkeys/rename", [("passkey", handle), ("name", "  Work\u{0007} laptop ")], cookie: cookie)
        XCTAssertEqual(renamed.status, 303)
        XCTAssertEqual(try server.store.passkey(credentialID: [1, 1])?.name, "Work laptop", "trimmed, control characters dropped")
        let empty = try await post("/account/passkeys/rename", [("passkey", handle), ("name", "   ")], cookie: cookie)
        XCTAssertEqual(empty.status, 422)
        let notMine = try await post("/account/passkeys/rename", [("passkey", foreign), ("name", "Mine now")], cookie: cookie)
        XCTAssertEqual(notMine.status, 404)
        let notMineRemoved = try await post("/account/passkeys/remove", [("passkey", foreign)], cookie: cookie)
        XCTAssertEqual(notMineRemoved.status, 404)
        XCTAssertEqual(try server.store.passkey(credentialID: [2, 2])?.name, "", "another account's passkey is untouched")

        let removed = try await post("/account/passkeys/remove", [("passkey", handle)], cookie: cookie)
        XCTAssertEqual(removed.status, 303, removed.body)
        XCTAssertNil(try server.store.passkey(credentialID: [1, 1]))
        XCTAssertEqual(try webhooks(), ["account.passkey_removed"])

        // A passkey-only account keeps its one passkey (the store says so; the page offers no button).
        let keyOnlyCookie = try await signInWithPasskeyStandIn(keyOnly)
        let keyOnlyPage = try await server.request("GET", "/account", headers: ["Cookie": keyOnlyCookie])
        XCTAssertTrue(keyOnlyPage.body.contains("your only way in"), keyOnlyPage.body)
        let refused = try await post("/account/passkeys/remove", [("passkey", foreign)], cookie: keyOnlyCookie)
        XCTAssertEqual(refused.status, 409)
        XCTAssertTrue(refused.body.contains("only way in"), refused.body)
        XCTAssertNotNil(try server.store.passkey(credentialID: [2, 2]))
    }

    /// A signed-in session for a passkey-only account, stored as a passkey sign-in stores one.
    private func signInWithPasskeyStandIn(_ account: Account) async throws -> String {
        let id = SignInSessionID.make()
        try server.store.startSignInSession(NewSignInSession(idHash: SignInSessionID.hash(id), accountID: account.id,
                                                             createdAt: clock.now, expiresAt: clock.now.addingTimeInterval(3600),
                                                             publicID: SignInSessionID.makePublicID()))
        return "\(SignedInUsers.plainCookieName)=\(id)"
    }

    // MARK: Export

    func testTheExportHoldsTheAccountsDataAndNoSecret() async throws {
        let owner = try account("Leaving")
        try server.store.addPasskey(Passkey(credentialID: [9, 9], accountID: owner.id, publicKey: [0xA5, 0x01], algorithm: -7,
                                            signCount: 3, transports: ["usb"], isBackupEligible: false, isBackedUp: false,
                                            createdAt: clock.now, name: "Key"))
        let cookie = try await signedIn("leaving")
        _ = try await signedIn("leaving")
        let export = try await server.request("GET", "/account/export", headers: ["Cookie": cookie])
        XCTAssertEqual(export.status, 200)
        XCTAssertEqual(export.headers["cache-control"], "no-store")
        XCTAssertTrue(export.headers["content-disposition"]?.contains("attachment") == true)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(export.body.utf8)) as? [String: Any])
        let account = try XCTUnwrap(json["account"] as? [String: Any])
        XCTAssertEqual(account["username"] as? String, "Leaving")
        XCTAssertEqual(account["email"] as? String, "leaving@example.org")
        XCTAssertEqual((json["sessions"] as? [[String: Any]])?.count, 2)
        XCTAssertEqual((json["sessions"] as? [[String: Any]])?.filter { $0["this_browser"] as? Bool == true }.count, 1)
        let passkey = try XCTUnwrap((json["passkeys"] as? [[String: Any]])?.first)
        XCTAssertEqual(passkey["public_key"] as? String, Base64URL.encode([0xA5, 0x01]))
        // Never a hash, a session id or its hash.
        XCTAssertFalse(export.body.contains("argon2"))
        XCTAssertFalse(export.body.contains(owner.passwordHash))
        let sessionID = try XCTUnwrap(cookie.split(separator: "=").last.map(String.init))
        XCTAssertFalse(export.body.contains(sessionID))
        XCTAssertFalse(export.body.contains(SignInSessionID.hash(sessionID)))
    }

    // MARK: Deletion

    func testDeletingTheAccountTakesEverythingAndKeepsTheNameReserved() async throws {
        let owner = try account("Goodbye")
        try account("Staying")
        try server.store.addPasskey(Passkey(credentialID: [5], accountID: owner.id, publicKey: [0xA5], algorithm: -7, signCount: 0,
                                            transports: [], isBackupEligible: false, isBackedUp: false, createdAt: clock.now))
        let cookie = try await signedIn("goodbye")
        let other = try await signedIn("goodbye")
        let control = try await signedIn("staying")

        let preview = try await server.request("GET", "/account/delete", headers: ["Cookie": cookie])
        XCTAssertTrue(preview.body.contains("Signed-in browsers: 2"), preview.body)
        XCTAssertTrue(preview.body.contains("Passkeys: 1"))
        let mismatch = try await post("/account/delete", [("confirm_username", "goodby")], cookie: cookie)
        XCTAssertEqual(mismatch.status, 422)
        XCTAssertTrue(mismatch.body.contains("Type your username exactly"), mismatch.body)
        let crossSite = try await post("/account/delete", [("confirm_username", "Goodbye")], cookie: cookie,
                                       headers: ["Origin": "https://evil.example"])
        XCTAssertEqual(crossSite.status, 403)
        XCTAssertNotNil(try server.store.account(named: "goodbye"), "neither deletes anything")

        let deleted = try await post("/account/delete", [("confirm_username", "goodbye")], cookie: cookie)
        XCTAssertEqual(deleted.status, 200, deleted.body)
        XCTAssertTrue(deleted.body.contains("Your account was deleted"))
        XCTAssertTrue(deleted.headers["set-cookie"]?.contains("Max-Age=0") == true, "this browser is signed out")
        XCTAssertNil(try server.store.account(named: "goodbye"))
        XCTAssertNil(try server.store.passkey(credentialID: [5]))
        let otherStatus = try await auth(other)
        XCTAssertEqual(otherStatus, 401)
        let controlStatus = try await auth(control)
        XCTAssertEqual(controlStatus, 200)
        XCTAssertTrue(try server.store.isUsernameTaken("Goodbye", at: clock.now.addingTimeInterval(29 * 86_400)),
                      "reserved for the default 30 days")
        XCTAssertFalse(try server.store.isUsernameTaken("Goodbye", at: clock.now.addingTimeInterval(31 * 86_400)))
        XCTAssertEqual(try webhooks(), ["account.deleted"])
    }

    // MARK: The address

    /// A new address is checked as on the sign-up form, proved by a mailed code (the old one
    /// stays until then), told to the old address with an undo link; the undo brings it back
    /// once and signs every browser out. An address another account proved reads the same
    /// and proves nothing; its owner is told.
    func testANewAddressIsProvedThenToldToTheOldOneWhichCanUndoIt() async throws {
        try account("Relocator")
        try account("Resident")
        let cookie = try await signedIn("relocator")
        let form = try await server.request("GET", "/account/email", headers: ["Cookie": cookie])
        XCTAssertEqual(form.status, 200)
        XCTAssertTrue(form.body.contains(#"data-session-url="/account/email/session""#))
        XCTAssertTrue(form.body.contains("relocator@example.org"), "the address now is named")
        XCTAssertFalse(form.body.contains(#"name="password""#), "the address alone")
        // Its live session takes edits of the address (the view model of a form without a password).
        let liveToken = try XCTUnwrap(form.body.firstMatch(of: #/name="token" value="([^"]+)"/#)).1
        let edit = try await server.request("POST", "/fields", body: FormURLEncoder.encode([
            ("token", String(liveToken)), ("field", "email"), ("value", "someone@gmial.com"), ("seq", "1"),
        ]))
        XCTAssertLessThan(edit.status, 300, edit.body)

        let malformed = try await post("/account/email", [("email", "not-an-address")], cookie: cookie)
        XCTAssertEqual(malformed.status, 422)
        let same = try await post("/account/email", [("email", "Relocator@example.org")], cookie: cookie)
        XCTAssertEqual(same.status, 422)
        XCTAssertTrue(same.body.contains("That is your address already"), same.body)

        // Another account's proved address: the same answer, no code proves it, its owner told.
        let claimed = try await post("/account/email", [("email", "resident@example.org")], cookie: cookie)
        XCTAssertEqual(claimed.status, 303, claimed.body)
        XCTAssertEqual(claimed.headers["location"], "/account/email/code")
        let told = try await mails(to: "resident@example.org", count: 1)
        XCTAssertTrue(told[0].subject.contains("Someone tried to use your address"), told[0].subject)
        XCTAssertNil(told[0].text.firstMatch(of: #/\n\s+(\d{6})\n/#), "no code in it")

        let started = try await post("/account/email", [("email", "fresh@example.org")], cookie: cookie)
        XCTAssertEqual(started.status, 303)
        XCTAssertEqual(started.headers["location"], "/account/email/code")
        let codeMail = try await mails(to: "fresh@example.org", count: 1)[0]
        let code = try XCTUnwrap(codeMail.text.firstMatch(of: #/\n\s+(\d{6})\n/#)).1
        XCTAssertEqual(try server.store.account(named: "relocator")?.email, "relocator@example.org", "the old one stays until the proof")
        let codePage = try await server.request("GET", "/account/email/code", headers: ["Cookie": cookie])
        XCTAssertTrue(codePage.body.contains("f…@example.org"), "masked: \(codePage.body)")

        let wrongCode = String(code) == "000000" ? "111111" : "000000"
        let wrong = try await post("/account/email/code", [("code", wrongCode)], cookie: cookie)
        XCTAssertEqual(wrong.status, 422)
        XCTAssertTrue(wrong.body.contains("4 tries left"), wrong.body)
        let right = try await post("/account/email/code", [("code", String(code))], cookie: cookie)
        XCTAssertEqual(right.status, 303, right.body)
        XCTAssertEqual(right.headers["location"], "/account?email=changed")
        let moved = try XCTUnwrap(try server.store.account(named: "relocator"))
        XCTAssertEqual(moved.email, "fresh@example.org")
        XCTAssertNotNil(moved.emailVerifiedAt)
        XCTAssertEqual(try server.store.account(named: "resident")?.email, "resident@example.org", "another account untouched")
        XCTAssertEqual(try webhooks(), ["account.email_changed"])

        // Whoever changed it adds a passkey to come back by (issue 52, item 5).
        try server.store.addPasskey(Passkey(credentialID: [4, 2], accountID: moved.id, publicKey: [1], algorithm: -7, signCount: 0,
                                            transports: [], isBackupEligible: false, isBackedUp: false, createdAt: clock.now),
                                    events: [])

        // The old address is told, with its way back.
        let oldMail = try await mails(to: "relocator@example.org", count: 1)[0]
        XCTAssertTrue(oldMail.text.contains("f…@example.org"), oldMail.text)
        let link = try XCTUnwrap(oldMail.text.firstMatch(of: #/undo\?link=([A-Za-z0-9_-]{43})/#)).1
        // Issue 52: the secret leaves the URL at once, into a cookie only the undo page reads.
        let opened = try await server.request("GET", "/account/email/undo?link=\(link)")
        XCTAssertEqual(opened.status, 303, "the link's secret leaves the URL before anything renders")
        XCTAssertEqual(opened.headers["location"], "/account/email/undo")
        XCTAssertEqual(opened.headers["referrer-policy"], "no-referrer")
        let undoCookie = try XCTUnwrap(opened.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        XCTAssertTrue(undoCookie.hasPrefix(AccountEmailRoutes.undoCookie + "=") && undoCookie.hasSuffix(String(link)), undoCookie)
        XCTAssertTrue(opened.headers["set-cookie"]?.contains("Path=/account/email/undo") == true)
        let undoPage = try await server.request("GET", "/account/email/undo", headers: ["Cookie": undoCookie])
        XCTAssertEqual(undoPage.status, 200, "a look spends nothing")
        XCTAssertFalse(undoPage.body.contains(String(link)), "the page never carries the secret")
        XCTAssertTrue(undoPage.body.contains("data-undo-email"))
        let undone = try await server.request("POST", "/account/email/undo", body: "", headers: ["Cookie": undoCookie])
        XCTAssertEqual(undone.status, 200, undone.body)
        XCTAssertTrue(undone.headers["set-cookie"]?.contains(AccountEmailRoutes.undoCookie + "=;") == true, "its cookie ends")
        XCTAssertTrue(undone.body.contains("data-undo-cleaned"), "what was added since is removed, and said")
        XCTAssertTrue(try server.store.passkeys(ofAccount: moved.id).isEmpty, "the taker's passkey is gone")
        XCTAssertTrue(undone.body.contains("Your address is back"))
        XCTAssertEqual(try server.store.account(named: "relocator")?.email, "relocator@example.org")
        let status = try await auth(cookie)
        XCTAssertEqual(status, 401, "whoever changed it is signed out")
        let again = try await server.request("POST", "/account/email/undo", body: FormURLEncoder.encode([("link", String(link))]))
        XCTAssertEqual(again.status, 410, "once")
    }

    // MARK: Disabled accounts

    func testADisabledAccountIsRefusedOnlyAfterTheRightPassword() async throws {
        let owner = try account("Paused")
        let cookie = try await signedIn("paused")
        _ = try server.store.setAccountDisabled(id: owner.id, at: clock.now, events: [])
        clock.advance(by: 6) // past the instance's 5 s memory of the session
        let status = try await auth(cookie)
        XCTAssertEqual(status, 401, "its sessions ended")
        let wrong = try await signIn("paused", "not-the-password")
        XCTAssertEqual(wrong.status, 401, "a wrong password reads as for any account")
        let right = try await server.request("POST", "/signin", body: FormURLEncoder.encode([("username", "paused"),
                                                                                             ("password", password)]))
        XCTAssertEqual(right.status, 403)
        XCTAssertTrue(right.body.contains("This account is disabled"), right.body)
        // Nor does a mailed recovery reopen it: the page reads as for any name, nothing is sent.
        let recovery = try await server.request("POST", "/recover", body: FormURLEncoder.encode([("identifier", "paused")]))
        XCTAssertEqual(recovery.status, 200)
        let token = try XCTUnwrap(recovery.body.firstMatch(of: #/name="token" value="([^"]+)"/#)).1
        let stored = try XCTUnwrap(try server.store.recovery(token: String(token), at: clock.now))
        XCTAssertNil(stored.accountID, "a stand-in: no code or link leads into the account")
        _ = try server.store.setAccountDisabled(id: owner.id, at: nil, events: [])
        let again = try await signIn("paused")
        XCTAssertEqual(again.status, 303)
    }
}
