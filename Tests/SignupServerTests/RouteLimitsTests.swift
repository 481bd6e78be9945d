import Foundation
import HTTPTestSupport
import Logging
import MicroHTTPD
import SignupDomain
import SignupSQLite
@testable import Identity
@testable import SignupServer
@testable import WebKernel
import XCTest

/// Issue 41: a route's row names the limits it spends (`Route.limits`), and that list must be
/// the truth: the 429s of a limit, its metric label and the operators' reading of the table
/// all rest on it. This walks every row in process, as people use them (a live form, a
/// sign-up proved by mail, failed and good sign-ins, passkey ceremonies, the proxy's /auth),
/// records every limit each request asks (`Configuration.onLimitConsulted`), and holds each
/// row to exactly the limits its requests asked: none unnamed, none named in vain.
final class RouteLimitsTests: XCTestCase {
    private var directory: URL!
    private var store: SQLiteAccountStore!
    private let clock = TestClock()
    private let asked = AskedLimits()
    /// The key codes and links are hashed with, so the walk can make a recovery it knows the code of.
    private let codeKey = VerificationSecrets.makeKey()
    private var app: SignupApplication!
    /// The limits each row's requests asked, by the row's name.
    private var consulted: [String: Set<String>] = [:]

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-limits-\(UUID().uuidString)")
        store = try SQLiteAccountStore(path: directory.appendingPathComponent("test.sqlite").path)
        var configuration = SignupApplication.Configuration.forTests()
        configuration.clock = clock
        configuration.availabilityDebounce = .zero
        configuration.askCheapProofs()
        // Every limit unlimited: nothing is refused, and every one is still asked.
        configuration.limits = .none
        var verification = EmailVerificationSettings(mail: MailSettings(transport: CapturedMail(), from: "t <t@example.org>"))
        verification.resendCooldown = 0
        configuration.emailVerification = verification
        configuration.onLimitConsulted = { [asked] in asked.record($0) }
        configuration.verificationCodeKey = codeKey
        var quiet = Logger(label: "livesignup-limits-test")
        quiet.logLevel = .critical
        app = try SignupApplication(configuration: configuration, store: store, logger: quiet)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Sends one request in process and files the limits it asked under its row. `settle`
    /// waits (bounded) for work the request started after its answer (a live look-up).
    @discardableResult
    private func send(_ method: String, _ path: String, _ fields: [(String, String)] = [], cookie: String? = nil,
                      settle: String? = nil) async -> HTTPResponse {
        var headers = HTTPHeaders()
        if !fields.isEmpty { headers.add("Content-Type", "application/x-www-form-urlencoded") }
        if let cookie { headers.add("Cookie", cookie) }
        let parts = path.split(separator: "?", maxSplits: 1)
        let query = parts.count > 1 ? parts[1].split(separator: "&").map { pair -> (name: String, value: String) in
            let kv = pair.split(separator: "=", maxSplits: 1)
            return (String(kv[0]), kv.count > 1 ? String(kv[1]) : "")
        } : []
        let body = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
            .joined(separator: "&")
        asked.clear()
        let response = await app.respond(to: HTTPRequest(method: method, path: String(parts[0]), query: query, headers: headers,
                                                         body: Array(body.utf8)))
        if let settle {
            let asked = asked
            let settled = await Condition.wait(timeout: 10) { asked.names.contains(settle) }
            XCTAssertTrue(settled, "\(path) went on to ask \(settle)")
        }
        let row = try? XCTUnwrap(app.routeTable.resolve(String(parts[0]))?.route(for: HTTPMethod(rawValue: method)), path)
        consulted[row.map(Self.key) ?? path, default: []].formUnion(asked.names)
        return response
    }

    private func text(_ response: HTTPResponse) -> String {
        guard case .bytes(let bytes) = response.body else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func cookie(_ response: HTTPResponse, named name: String) -> String? {
        response.headers.values(of: "Set-Cookie").first { $0.hasPrefix(name + "=") }?.split(separator: ";").first.map(String.init)
    }

    // The walk, by area: each area's test holds its rows to no unnamed limit; the whole walk,
    // in this order (a failed sign-in early makes later sign-ins pay a proof, and so ask its
    // limit), holds every row to naming nothing in vain and reaches every row.

    func testTheLiveFormsRowsAskNoLimitTheyDoNotName() async throws {
        _ = try await walkTheLiveForm()
        assertNoRowAsksAnUnnamedLimit()
    }

    func testTheSignUpsRowsAskNoLimitTheyDoNotName() async throws {
        try await walkASignUpProvedByMail(token: try await walkTheLiveForm())
        assertNoRowAsksAnUnnamedLimit()
    }

    func testTheAccountsRowsAskNoLimitTheyDoNotName() async throws {
        _ = try await walkASignedInAccount()
        assertNoRowAsksAnUnnamedLimit()
    }

    func testTheRecoverysRowsAskNoLimitTheyDoNotName() async throws {
        try await walkARecovery(of: try await walkASignedInAccount())
        assertNoRowAsksAnUnnamedLimit()
    }

    func testTheSecondFactorsRowsAskNoLimitTheyDoNotName() async throws {
        try await walkASecondFactor()
        assertNoRowAsksAnUnnamedLimit()
    }

    func testTheDeletionProvidersAndOperationsRowsAskNoLimitTheyDoNotName() async throws {
        try await walkADeletion()
        try await walkTheProviders()
        await walkTheOperations()
        assertNoRowAsksAnUnnamedLimit()
    }

    func testTheWholeWalkReachesEveryRowAndEachNamesOnlyLimitsItsRequestsAsk() async throws {
        try await walkASignUpProvedByMail(token: try await walkTheLiveForm())
        try await walkARecovery(of: try await walkASignedInAccount())
        try await walkASecondFactor()
        try await walkADeletion()
        try await walkTheProviders()
        await walkTheOperations()
        for row in app.routeTable.routes {
            let asked = try XCTUnwrap(consulted[Self.key(row)], "the walk reaches \(Self.key(row))")
            let declared = Set(row.limits.map(\.rawValue))
            XCTAssertEqual(asked.subtracting(declared), [], "\(Self.key(row)) asks limits its row does not name")
            XCTAssertEqual(declared.subtracting(asked), [], "\(Self.key(row)) names limits none of its requests asked")
        }
    }

    /// The costs a row has the router spend first (`RouterSpentLimitsTests`) are per-address ones.
    func testEveryLimitARowSpendsFirstIsOnePerAddressLimit() {
        let limiters = ClientLimiters(SignupLimits(), now: { Date() })
        for row in app.routeTable.routes {
            for name in row.spentFirst {
                XCTAssertNotNil(limiters.perAddress(name), "\(row.name) spends \(name) first")
            }
        }
    }

    private func assertNoRowAsksAnUnnamedLimit() {
        XCTAssertFalse(consulted.isEmpty, "the walk sent nothing")
        for row in app.routeTable.routes {
            guard let asked = consulted[Self.key(row)] else { continue }
            XCTAssertEqual(asked.subtracting(Set(row.limits.map(\.rawValue))), [],
                           "\(Self.key(row)) asks limits its row does not name")
        }
    }

    private let password = "Cobol-Rocks-1959"
    private var hash: String {
        get throws { try Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024).hash(password) }
    }

    /// The live form and a passkey on it; returns the form's token.
    private func walkTheLiveForm() async throws -> String {
        // The live form.
        let page = text(await send("GET", "/"))
        let token = try XCTUnwrap(page.firstMatch(of: #/name="token" value="([^"]+)"/#)?.1).description
        let fresh = text(await send("POST", "/sessions"))
        let other = try XCTUnwrap(fresh.firstMatch(of: #/"token":"([^"]+)"/#)?.1).description
        await send("GET", "/challenge?token=\(other)")
        await send("GET", "/events?token=\(other)")
        await send("POST", "/fields", [("token", token), ("field", "username"), ("value", "limits_person"), ("seq", "1")],
                   settle: "lookups")

        // A passkey on the form (its response refused: the limits come first).
        let options = await send("POST", "/passkeys/options", [("token", token)])
        await send("POST", "/passkeys/register", [("token", token), ("response", "{}")],
                   cookie: cookie(options, named: PasskeyRoutes.browserCookie))

        return token
    }

    private func walkASignUpProvedByMail(token: String) async throws {
        // A sign-up waiting for its address, a new code, a wrong code, a changed address.
        let pending = await send("POST", "/signup", [("token", token), ("username", "limits_person"),
                                                     ("email", "limits@example.org"), ("password", password),
                                                     ("confirm", password)])
        XCTAssertEqual(pending.status, .seeOther, text(pending))
        await send("GET", "/verify?token=\(token)")
        await send("POST", "/verify/resend", [("token", token)])
        // A failed sign-in: from now on this client's sign-ins and codes pay a proof of work.
        let failed = await send("POST", "/signin", [("username", "nobody_here"), ("password", "wrong-one")])
        XCTAssertEqual(failed.status, .unauthorized)
        await send("POST", "/verify", [("token", token), ("code", "000000")])
        await send("GET", "/verify?link=not-a-real-link")
        await send("POST", "/verify/change", [("token", token)],
                   cookie: cookie(pending, named: AddressProofs.browserCookie))

    }

    /// A signed-in account: its pages, passkeys and the proxy's question; returns the account.
    private func walkASignedInAccount() async throws -> Account {
        let hash = try hash
        let owner = try store.createAccount(NewAccount(username: "limits_owner", email: "owner@example.org", passwordHash: hash,
                                                       formToken: "limits-owner-form"))
        await send("GET", "/signin")
        let signedIn = await send("POST", "/signin", [("username", "limits_owner"), ("password", password)])
        XCTAssertEqual(signedIn.status, .seeOther, text(signedIn))
        let session = try XCTUnwrap(cookie(signedIn, named: SignedInUsers.plainCookieName))
        await send("GET", "/welcome", cookie: session)
        let account = text(await send("GET", "/account", cookie: session))
        await send("GET", "/account/events", cookie: session)
        let handle = account.firstMatch(of: #/name="session" value="([0-9a-f]{16})"/#).map { String($0.1) } ?? "0000000000000000"
        await send("POST", "/account/sessions/end", [("session", handle)], cookie: session)
        await send("POST", "/account/confirm", [("password", "not-the-password")], cookie: session)
        await send("POST", "/account/confirm", [("password", password)], cookie: session)
        await send("POST", "/account/sessions/end-others", [("lang", "en")], cookie: session)
        await send("POST", "/account/passkeys/options", [("mediation", "button")], cookie: session)
        await send("POST", "/account/passkeys", [("response", "{}")], cookie: session)
        await send("POST", "/account/passkeys/rename", [("passkey", "AAAA"), ("name", "Laptop")], cookie: session)
        await send("POST", "/account/passkeys/remove", [("passkey", "AAAA")], cookie: session)
        await send("GET", "/account/export", cookie: session)
        // The OpenID provider's rows for a signed-in person (issue 56).
        await send("POST", "/oauth2/consent", [("request", "client_id=none"), ("decision", "deny")], cookie: session)
        await send("POST", "/account/applications/revoke", [("client", "none")], cookie: session)
        await send("GET", "/oauth2/logout", cookie: session)
        await send("POST", "/oauth2/logout", [("lang", "en")])
        // A new address: its live form, a refused one (a fresh session), a code, a wrong code, an undo link.
        await send("GET", "/account/email", cookie: session)
        await send("POST", "/account/email/session", cookie: session)
        await send("POST", "/account/email", [("email", "not-an-address")], cookie: session)
        await send("POST", "/account/email", [("email", "moved@example.org")], cookie: session)
        await send("GET", "/account/email/code", cookie: session)
        await send("POST", "/account/email/code", [("code", "000000")], cookie: session)
        await send("GET", "/account/email/undo?link=" + VerificationSecrets.makeLinkToken())
        await send("POST", "/account/email/undo", [("link", VerificationSecrets.makeLinkToken())])
        await send("GET", "/account/delete", cookie: session)
        // A new password: its form's live session, one refused (a fresh session), one stored.
        await send("GET", "/account/password", cookie: session)
        await send("POST", "/account/password/session", cookie: session)
        await send("POST", "/account/password", [("current_password", password), ("password", "Fortran-Was-1957"),
                                                 ("confirm", "different")], cookie: session)
        let changed = await send("POST", "/account/password", [("current_password", password), ("password", "Fortran-Was-1957"),
                                                               ("confirm", "Fortran-Was-1957")], cookie: session)
        XCTAssertEqual(changed.status, .seeOther, text(changed))
        await send("POST", "/passkeys/signin/options")
        await send("POST", "/passkeys/signin", [("response", "{}")])
        await send("GET", "/auth", cookie: session)
        await send("GET", "/auth", cookie: "livesignup_auth=" + SignInSessionID.make())
        await send("POST", "/signout", cookie: "\(SignedInUsers.plainCookieName)=\(SignInSessionID.make())")
        await send("POST", "/signout", cookie: session)

        return owner
    }

    private func walkARecovery(of owner: Account) async throws {
        // Account recovery: a request, the link's first step, a wrong code and a right one (for a
        // recovery made here, whose code is known), the live form, a refused and a good password.
        await send("GET", "/recover")
        await send("GET", "/recover?link=" + VerificationSecrets.makeLinkToken())
        await send("POST", "/recover", [("identifier", "limits_owner")])
        let secrets = VerificationSecrets(key: codeKey)
        let recoveryToken = VerificationSecrets.makeLinkToken()
        try store.startRecovery(AccountRecovery(
            token: recoveryToken, accountID: owner.id, codeHash: secrets.codeHash("123456", formToken: recoveryToken),
            linkHash: VerificationSecrets.unmatchableHash(), language: "en", expiresAt: clock.now.addingTimeInterval(900),
            createdAt: clock.now), mail: nil)
        await send("POST", "/recover/code", [("token", recoveryToken), ("code", "000000")])
        let opened = await send("POST", "/recover/code", [("token", recoveryToken), ("code", "123456")])
        let recoveryCookie = try XCTUnwrap(cookie(opened, named: RecoveryRoutes.secretCookie), "a right code opens the form")
        let newPasswordForm = text(await send("GET", "/recover/password", cookie: recoveryCookie))
        let newPasswordToken = try XCTUnwrap(newPasswordForm.firstMatch(of: #/name="token" value="([^"]+)"/#)?.1).description
        // Its live "not your current password" is a hash.
        await send("POST", "/fields", [("token", newPasswordToken), ("field", "password"), ("value", "Another-Cobol-1960"),
                                       ("seq", "1")], settle: "hashing")
        await send("POST", "/recover/session", cookie: recoveryCookie)
        let refused = await send("POST", "/recover/password", [("password", "Another-Cobol-1960"), ("confirm", "different")],
                                 cookie: recoveryCookie)
        XCTAssertEqual(refused.status, .unprocessableContent, text(refused))
        let reset = await send("POST", "/recover/password", [("password", "Another-Cobol-1960"), ("confirm", "Another-Cobol-1960")],
                               cookie: recoveryCookie)
        XCTAssertEqual(reset.status, .seeOther, text(reset))
    }

    private func walkASecondFactor() async throws {
        let hash = try hash
        // A second factor: set up (a wrong code, the right one), new codes, then asked at sign-in and removed.
        _ = try store.createAccount(NewAccount(username: "limits_two", email: "two@example.org", passwordHash: hash,
                                               formToken: "limits-two-form"))
        let twoSignIn = await send("POST", "/signin", [("username", "limits_two"), ("password", password)])
        let two = try XCTUnwrap(cookie(twoSignIn, named: SignedInUsers.plainCookieName))
        let setup = text(await send("GET", "/account/second-factor", cookie: two))
        let key = try XCTUnwrap(setup.firstMatch(of: #/data-key dir="ltr">([A-Z2-7 ]+)</#)).1
        let app = TOTP(secret: try XCTUnwrap(Base32.decode(String(key))))
        await send("POST", "/account/second-factor", [("code", "000000")], cookie: two)
        await send("POST", "/account/second-factor", [("code", app.code(atStep: TOTP.step(at: clock.now)))], cookie: two)
        await send("POST", "/account/second-factor/codes", [("code", "000000")], cookie: two)
        clock.advance(by: 30)
        let stepAnswer = await send("POST", "/signin", [("username", "limits_two"), ("password", password)])
        let step = try XCTUnwrap(cookie(stepAnswer, named: SecondStepGate.cookie))
        await send("GET", "/signin/second-factor", cookie: step)
        await send("POST", "/signin/second-factor", [("code", "000000")], cookie: step)
        let twoAgain = await send("POST", "/signin/second-factor", [("code", app.code(atStep: TOTP.step(at: clock.now)))], cookie: step)
        let twoSession = try XCTUnwrap(cookie(twoAgain, named: SignedInUsers.plainCookieName), text(twoAgain))
        await send("POST", "/account/second-factor/remove", [("code", "000000")], cookie: twoSession)
    }

    private func walkADeletion() async throws {
        let hash = try hash
        // An account deleted by its owner.
        _ = try store.createAccount(NewAccount(username: "limits_leaver", email: "leaver@example.org", passwordHash: hash,
                                               formToken: "limits-leaver-form"))
        let leaverSignIn = await send("POST", "/signin", [("username", "limits_leaver"), ("password", password)])
        let leaver = try XCTUnwrap(cookie(leaverSignIn, named: SignedInUsers.plainCookieName))
        let deleted = await send("POST", "/account/delete", [("confirm_username", "limits_leaver")], cookie: leaver)
        XCTAssertEqual(deleted.status, .ok, text(deleted))
    }

    private func walkTheProviders() async throws {
        let hash = try hash
        // Providers (issue 45): none is configured here, so each request gets its refusal; the
        // router spends the row's limits first all the same.
        await send("POST", "/signin/provider", [("provider", "nobody")])
        await send("GET", "/signin/provider/callback?state=s&code=c")
        _ = try store.createAccount(NewAccount(username: "limits_linker", email: "linker@example.org", passwordHash: hash,
                                               formToken: "limits-linker-form"))
        let linkerSignIn = await send("POST", "/signin", [("username", "limits_linker"), ("password", password)])
        let linker = try XCTUnwrap(cookie(linkerSignIn, named: SignedInUsers.plainCookieName))
        await send("POST", "/account/providers/link", [("provider", "nobody")], cookie: linker)
        await send("POST", "/account/providers/confirm", [("provider", "nobody")], cookie: linker)
        await send("POST", "/account/providers/unlink", [("issuer", "https://id.example"), ("subject", "s")], cookie: linker)
    }

    private func walkTheOperations() async {
        // Operations.
        for path in ["/healthz", "/readyz", "/metrics", "/static/app.js"] { await send("GET", path) }
        // The OpenID provider (issue 56): pages for what a browser asks, tokens for what an
        // application's server asks.
        for path in ["/.well-known/jwks.json", "/.well-known/openid-configuration", "/oauth2/authorize?client_id=none",
                     "/oauth2/userinfo"] { await send("GET", path) }
        for path in ["/oauth2/token", "/oauth2/userinfo", "/oauth2/revoke", "/oauth2/introspect"] {
            await send("POST", path, [("client_id", "none")])
        }
    }

    /// A row as the walk records it: "POST /signin".
    private static func key(_ row: Route) -> String { row.method.rawValue + " " + row.name }
}

/// The costs every request of a route pays are spent by the router before its handler runs
/// (`Route.spentFirst`), answered in the row's format: a malformed request of such a route is
/// over its limit like any other, and no handler repeats the call.
final class RouterSpentLimitsTests: XCTestCase {
    func testTheRouterSpendsARowsCostsBeforeTheHandlerLooksAtTheRequest() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-first-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = SignupApplication.Configuration.forTests()
        configuration.limits = .none
        // One of each, then none for an hour.
        configuration.limits.pagesPerAddress = Rate(burst: 1, perSecond: 1.0 / 3600)
        configuration.limits.editsPerAddress = Rate(burst: 1, perSecond: 1.0 / 3600)
        configuration.limits.passkeysPerAddress = Rate(burst: 1, perSecond: 1.0 / 3600)
        var quiet = Logger(label: "livesignup-first-test")
        quiet.logLevel = .critical
        let app = try SignupApplication(configuration: configuration,
                                        store: try SQLiteAccountStore(path: directory.appendingPathComponent("t.sqlite").path),
                                        logger: quiet)
        func answer(_ method: String, _ path: String, body: String = "") async -> (HTTPStatus, String) {
            let headers = HTTPHeaders(body.isEmpty ? [] : [("Content-Type", "application/x-www-form-urlencoded")])
            let response = await app.respond(to: HTTPRequest(method: method, path: path, headers: headers, body: Array(body.utf8)))
            guard case .bytes(let bytes) = response.body else { return (response.status, "") }
            return (response.status, String(decoding: bytes, as: UTF8.self))
        }
        // Malformed requests spend the route's cost too, then are told what is wrong.
        let noToken = await answer("GET", "/challenge")
        XCTAssertEqual(noToken.0, .notFound, "proofs are off here: the handler's answer, after the cost")
        let overPages = await answer("GET", "/challenge")
        XCTAssertEqual(overPages.0, .tooManyRequests)
        XCTAssertTrue(overPages.1.contains("\"limit\":\"pages\""), overPages.1)
        let page = await answer("GET", "/")
        XCTAssertEqual(page.0, .tooManyRequests, "pages are one budget for the form and its JSON routes")
        XCTAssertTrue(page.1.contains("data-problem=\"rate_limited\""), "a page where a person is looking: \(page.1.prefix(200))")

        let garbage = await answer("POST", "/fields", body: "nonsense=1")
        XCTAssertEqual(garbage.0, .badRequest)
        let overEdits = await answer("POST", "/fields", body: "nonsense=2")
        XCTAssertEqual(overEdits.0, .tooManyRequests, "a flood of malformed edits is limited like edits")

        let firstPasskey = await answer("POST", "/passkeys/signin", body: "response=x")
        XCTAssertEqual(firstPasskey.0, .badRequest)
        let overPasskeys = await answer("POST", "/account/passkeys", body: "response=x")
        XCTAssertEqual(overPasskeys.0, .tooManyRequests, "one passkey budget for all three ceremonies")
    }
}

/// The limits asked since the last `clear`, from any thread.
final class AskedLimits: @unchecked Sendable {
    private let lock = NSLock()
    private var asked: Set<String> = []

    func record(_ name: String) { _ = lock.withLock { asked.insert(name) } }
    func clear() { lock.withLock { asked = [] } }
    var names: Set<String> { lock.withLock { asked } }
}
