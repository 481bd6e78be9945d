import Foundation
import GRDB
import HTTPTestSupport
import LiveSignupClient
import SignupDomain
@testable import SignupServer
@testable import WebKernel
import XCTest

/// Issue 43, its first part: `/account` shows where the account is signed in, and its owner
/// signs any other browser out, or every other one; nobody else's sessions move.
final class AccountPageTests: XCTestCase {
    private var server: TestServer!
    private let clock = TestClock()
    private let password = "Many-Devices-1965"

    override func setUpWithError() throws {
        server = try TestServer { [clock] configuration in configuration.clock = clock }
    }

    override func tearDown() {
        server.stop()
    }

    private func account(_ username: String) throws -> Account {
        let hash = try Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024).hash(password)
        return try server.store.createAccount(NewAccount(username: username, email: "\(username)@example.org",
                                                         passwordHash: hash, formToken: "\(username)-form"))
    }

    /// A browser of `username`, signed in: its cookie.
    private func signIn(_ username: String, agent: String) async throws -> String {
        let response = try await server.request("POST", "/signin",
                                                body: FormURLEncoder.encode([("username", username), ("password", password)]),
                                                headers: ["User-Agent": agent])
        XCTAssertEqual(response.status, 303, response.body)
        return try XCTUnwrap(response.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
    }

    private func status(of cookie: String) async throws -> Int {
        try await server.request("GET", "/auth", headers: ["Cookie": cookie]).status
    }

    private static let firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
    private static let safari = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
    private static let edge = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0"

    /// A handler may let the account store's error through: the router answers it with the one
    /// 503, a page in the person's language that says to try again, and nothing else moves. Here
    /// the passkeys' table is taken away under a running server, and renaming a passkey fails.
    func testAStoreErrorAHandlerLetsThroughIsTheRoutersReadable503() async throws {
        _ = try account("Renamer")
        _ = try account("Bystander")
        let renamer = try await signIn("renamer", agent: Self.firefox)
        let control = try await signIn("bystander", agent: Self.safari)
        let path = server.databaseDirectory.appendingPathComponent("test.sqlite").path
        try await DatabaseQueue(path: path).write { try $0.execute(sql: "ALTER TABLE passkeys RENAME TO passkeys_away") }
        let answer = try await server.request("POST", "/account/passkeys/rename",
                                              body: FormURLEncoder.encode([("passkey", "AAAA"), ("name", "Laptop"), ("lang", "de")]),
                                              headers: ["Cookie": renamer])
        XCTAssertEqual(answer.status, 503, answer.body)
        XCTAssertEqual(answer.headers["retry-after"], "5")
        XCTAssertEqual(answer.headers["content-language"], "de")
        XCTAssertTrue(answer.body.contains("Gerade nicht möglich"), answer.body)
        try await DatabaseQueue(path: path).write { try $0.execute(sql: "ALTER TABLE passkeys_away RENAME TO passkeys") }
        // Both browsers are still signed in, and the same request now gets its own answer.
        let renamerStatus = try await status(of: renamer), controlStatus = try await status(of: control)
        XCTAssertEqual([renamerStatus, controlStatus], [200, 200])
        let again = try await server.request("POST", "/account/passkeys/rename",
                                             body: FormURLEncoder.encode([("passkey", "AAAA"), ("name", "Laptop")]),
                                             headers: ["Cookie": renamer])
        XCTAssertEqual(again.status, 404, "no such passkey, said on the account page")
    }

    func testTheOwnerSeesEveryDeviceAndSignsOneOutThenEveryOther() async throws {
        _ = try account("Traveller")
        _ = try account("Bystander")
        let laptop = try await signIn("traveller", agent: Self.firefox)
        let phone = try await signIn("traveller", agent: Self.safari)
        let desktop = try await signIn("traveller", agent: Self.edge)
        let control = try await signIn("bystander", agent: Self.firefox)

        let page = try await server.request("GET", "/account", headers: ["Cookie": laptop])
        XCTAssertEqual(page.status, 200, page.body)
        XCTAssertEqual(page.headers["cache-control"], "no-store")
        for device in ["Firefox · Linux", "Safari · iOS", "Edge · Windows"] { XCTAssertTrue(page.body.contains(device), device) }
        XCTAssertEqual(page.body.components(separatedBy: "data-this-browser").count - 1, 1, "one is this browser")
        XCTAssertTrue(page.body.contains("127.0.0.0/24"), "the network, never the address")
        XCTAssertFalse(page.body.contains("127.0.0.1"))
        let handles = page.body.matches(of: #/name="session" value="([0-9a-f]{16})"/#).map { String($0.1) }
        XCTAssertEqual(handles.count, 2, "a sign-out button for each other browser, none for this one")

        // The phone's handle: the entry that names Safari.
        let phoneEntry = try XCTUnwrap(page.body.firstMatch(of: #/data-device="([0-9a-f]{16})">\s*<p class="device-name"><strong><bdi>Safari/#))
        let ended = try await server.request("POST", "/account/sessions/end",
                                             body: FormURLEncoder.encode([("session", String(phoneEntry.1))]),
                                             headers: ["Cookie": laptop])
        XCTAssertEqual(ended.status, 303, ended.body)
        XCTAssertEqual(ended.headers["location"], "/account?ended=one")
        var phoneStatus = try await status(of: phone)
        XCTAssertEqual(phoneStatus, 401, "signed out at once on this instance")
        var desktopStatus = try await status(of: desktop)
        XCTAssertEqual(desktopStatus, 200)

        // A handle that is not this account's ends nothing, and says so.
        let unknown = try await server.request("POST", "/account/sessions/end",
                                               body: FormURLEncoder.encode([("session", String(phoneEntry.1))]),
                                               headers: ["Cookie": laptop])
        XCTAssertEqual(unknown.status, 404)
        XCTAssertTrue(unknown.body.contains("That browser is not signed in any more"), unknown.body)

        let others = try await server.request("POST", "/account/sessions/end-others", body: "", headers: ["Cookie": laptop])
        XCTAssertEqual(others.status, 303)
        XCTAssertEqual(others.headers["location"], "/account?others=1")
        desktopStatus = try await status(of: desktop)
        XCTAssertEqual(desktopStatus, 401)
        let laptopStatus = try await status(of: laptop)
        XCTAssertEqual(laptopStatus, 200, "this browser stays signed in")
        let controlStatus = try await status(of: control)
        XCTAssertEqual(controlStatus, 200, "another account's session is untouched")
        phoneStatus = try await status(of: phone)
        XCTAssertEqual(phoneStatus, 401)
        let after = try await server.request("GET", "/account?others=1", headers: ["Cookie": laptop])
        XCTAssertTrue(after.body.contains("Signed out everywhere else (1)."), after.body)
        XCTAssertFalse(after.body.contains("name=\"session\""), "no other browser is left")
    }

    /// The page's stream: a sign-in elsewhere appears in an open tab within the second the
    /// store is read (the test clock moves it); a sign-out elsewhere leaves it; the tab whose
    /// own session ends is told it is signed out and closed. A signed-out request gets 401.
    func testAnOpenAccountPageSeesSignInsAndSignOutsElsewhere() async throws {
        _ = try account("Watcher")
        let laptop = try await signIn("watcher", agent: Self.firefox)
        let port = try XCTUnwrap(server.baseURL.port)
        let tab = try RawHTTPConnection(port: UInt16(port))
        tab.send("GET /account/events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nCookie: \(laptop)\r\n\r\n")
        XCTAssertTrue(tab.read { $0.contains("event: devices") && $0.contains("Firefox · Linux") }, tab.received)
        XCTAssertTrue(tab.received.contains(#""this_browser":true"#))
        XCTAssertTrue(tab.received.contains(#""open_until":""#), "a fresh sign-in: changes open")
        XCTAssertFalse(tab.received.contains("Safari"))

        let phone = try await signIn("watcher", agent: Self.safari)
        clock.advance(by: 1)
        XCTAssertTrue(tab.read { $0.contains("Safari · iOS") }, "the new sign-in appears: \(tab.received)")
        let ended = try await server.request("POST", "/signout", body: "", headers: ["Cookie": phone])
        XCTAssertEqual(ended.status, 303)
        let before = tab.received.count
        clock.advance(by: 1)
        XCTAssertTrue(tab.read { String($0.dropFirst(before)).contains("event: devices") }, "the list again, without it")
        XCTAssertFalse(String(tab.received.dropFirst(before)).contains("Safari"), tab.received)

        // Six minutes on: the tab hears that changes closed.
        let beforeClosing = tab.received.count
        clock.advance(by: 6 * 60)
        XCTAssertTrue(tab.read { String($0.dropFirst(beforeClosing)).contains(#""open_until":null"#) }, tab.received)

        // This browser signed out elsewhere (another tab): the stream says so and ends.
        _ = try await server.request("POST", "/signout", body: "", headers: ["Cookie": laptop])
        clock.advance(by: 1)
        XCTAssertTrue(tab.read { $0.contains("event: signed_out") }, tab.received)
        XCTAssertTrue(tab.readUntilClosed(), "closed")

        let signedOut = try await server.request("GET", "/account/events")
        XCTAssertEqual(signedOut.status, 401)
    }

    /// Issue 52, item 3: one account signed in over and over keeps at most
    /// `--signin-sessions-per-account` sessions (the least recently used end), and ten open
    /// tabs of its page cost no payload while nothing changes (they cost ten a second, each
    /// line made with two new date formatters, before); a change is built once per tab. One
    /// client opens at most `perClient` streams, whatever the accounts.
    func testAnAccountsSessionsAreCappedAndIdlePagesCostNothing() async throws {
        _ = try account("Busy")
        let cap = SignupLimits().signInSessionsPerAccount
        var cookies: [String] = []
        for _ in 0..<(cap + 10) {
            cookies.append(try await signIn("busy", agent: Self.firefox))
            clock.advance(by: 1)
        }
        let account = try XCTUnwrap(try server.store.account(named: "busy"))
        let kept = try server.store.signInSessions(ofAccount: account.id, at: clock.now, rules: SignInSessionRules(idleTimeout: 86_400))
        XCTAssertEqual(kept.count, cap, "at most the cap")
        let oldest = try await status(of: cookies[0]), newest = try await status(of: cookies[cap + 9])
        XCTAssertEqual(oldest, 401, "the least recently used ended")
        XCTAssertEqual(newest, 200)

        let port = try XCTUnwrap(server.baseURL.port)
        var tabs: [RawHTTPConnection] = []
        for cookie in cookies.suffix(10) {
            let tab = try RawHTTPConnection(port: UInt16(port))
            tab.send("GET /account/events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nCookie: \(cookie)\r\n\r\n")
            XCTAssertTrue(tab.read { $0.contains("event: devices") }, tab.received)
            tabs.append(tab)
        }
        let streams = server.app.services.signIn.accountStreams
        XCTAssertEqual(streams.payloadsBuilt, 10, "one each as it opened")
        let sizes = tabs.map(\.received.count)
        for _ in 0..<5 { clock.advance(by: 1) }
        // A change: built once more per tab, and sent.
        _ = try await signIn("busy", agent: Self.safari)
        clock.advance(by: 1)
        for (tab, size) in zip(tabs, sizes) {
            XCTAssertTrue(tab.read { String($0.dropFirst(size)).contains("Safari · iOS") }, tab.received)
        }
        XCTAssertEqual(streams.payloadsBuilt, 20, "five idle seconds built nothing")

        // One client, many accounts: at most `perClient` streams.
        var others: [RawHTTPConnection] = []
        for index in 0..<2 {
            _ = try self.account("Other\(index)")
            for _ in 0..<10 {
                let cookie = try await signIn("other\(index)", agent: Self.edge)
                let tab = try RawHTTPConnection(port: UInt16(port))
                tab.send("GET /account/events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nCookie: \(cookie)\r\n\r\n")
                XCTAssertTrue(tab.read { $0.contains("HTTP/1.1 ") }, tab.received)
                others.append(tab)
            }
        }
        let refused = others.filter { $0.received.contains("503") }
        XCTAssertEqual(refused.count, 10 + 20 - streams.perClient, "beyond \(streams.perClient) from one client")
        XCTAssertTrue(refused.first?.received.contains("too_many_streams") == true)
        withExtendedLifetime(tabs) {}
    }

    func testSignedOutVisitorsAreSentToSignInAndBack() async throws {
        let page = try await server.request("GET", "/account")
        XCTAssertEqual(page.status, 303)
        XCTAssertEqual(page.headers["location"], "/signin?return_to=%2Faccount")
        let post = try await server.request("POST", "/account/sessions/end-others", body: "")
        XCTAssertEqual(post.status, 303, "a signed-out post changes nothing")
    }

    func testAnotherSitesPostIsRefused() async throws {
        _ = try account("Targeted")
        let cookie = try await signIn("targeted", agent: Self.firefox)
        let second = try await signIn("targeted", agent: Self.safari)
        let refused = try await server.request("POST", "/account/sessions/end-others", body: "",
                                               headers: ["Cookie": cookie, "Origin": "https://evil.example"])
        XCTAssertEqual(refused.status, 403)
        let secondStatus = try await status(of: second)
        XCTAssertEqual(secondStatus, 200, "nothing ended")
    }

    /// A sign-in opens sensitive changes for `--recent-signin-minutes` (5); then the page asks
    /// for the password again; a wrong one is refused readably and counted like a failed
    /// sign-in; the right one opens them again, on this browser only.
    func testSensitiveChangesNeedARecentSignInAndTheRightPasswordRenewsIt() async throws {
        _ = try account("Careful")
        let cookie = try await signIn("careful", agent: Self.firefox)
        let other = try await signIn("careful", agent: Self.safari)
        var page = try await server.request("GET", "/account", headers: ["Cookie": cookie])
        XCTAssertTrue(page.body.contains("data-open-until="), "open right after signing in")
        XCTAssertFalse(page.body.contains("action=\"/account/confirm\""))

        clock.advance(by: 5 * 60)
        page = try await server.request("GET", "/account", headers: ["Cookie": cookie])
        XCTAssertFalse(page.body.contains("data-open-until="), "closed five minutes later")
        XCTAssertTrue(page.body.contains("action=\"/account/confirm\""), page.body)

        let wrong = try await server.request("POST", "/account/confirm", body: FormURLEncoder.encode([("password", "not-it")]),
                                             headers: ["Cookie": cookie])
        XCTAssertEqual(wrong.status, 401)
        XCTAssertTrue(wrong.body.contains("The password is incorrect"), wrong.body)
        XCTAssertFalse(wrong.body.contains("data-open-until="))
        let empty = try await server.request("POST", "/account/confirm", body: FormURLEncoder.encode([("password", "")]),
                                             headers: ["Cookie": cookie])
        XCTAssertEqual(empty.status, 422)

        let right = try await server.request("POST", "/account/confirm", body: FormURLEncoder.encode([("password", password)]),
                                             headers: ["Cookie": cookie])
        XCTAssertEqual(right.status, 303, right.body)
        XCTAssertEqual(right.headers["location"], "/account?confirmed=1")
        page = try await server.request("GET", "/account?confirmed=1", headers: ["Cookie": cookie])
        XCTAssertTrue(page.body.contains("Confirmed. Changes are open for 5 minutes."), page.body)
        XCTAssertTrue(page.body.contains("data-open-until="))
        let otherPage = try await server.request("GET", "/account", headers: ["Cookie": other])
        XCTAssertTrue(otherPage.body.contains("action=\"/account/confirm\""), "only the browser that confirmed is open")
    }

    func testFailedConfirmationsAreLimitedLikeSignIns() async throws {
        _ = try account("Guessed")
        let cookie = try await signIn("guessed", agent: Self.firefox)
        var statuses: [Int] = []
        for _ in 0..<6 {
            statuses.append(try await server.request("POST", "/account/confirm", body: FormURLEncoder.encode([("password", "guess")]),
                                                     headers: ["Cookie": cookie]).status)
        }
        XCTAssertEqual(statuses, [401, 401, 401, 401, 401, 429], "the account's five failures, then a wait")
    }
}
