import Foundation
import HTTPTestSupport
import LiveSignupClient
import Logging
import SignupDomain
import SignupSQLite
@testable import Identity
@testable import SignupServer
import XCTest

/// Signing in lasts and reaches the product (issue 20): the session lives in the account
/// store, so another instance (or this one restarted) knows it; `GET /auth` tells a proxy who
/// is signed in; sign-out and `sessions revoke` end it everywhere; every sign-in is a new id.
final class SignedInSessionTests: XCTestCase {
    private var server: TestServer!
    /// The server's clock: the tests move it (lifetimes, the confirmation window).
    private let clock = TestClock()

    override func setUpWithError() throws {
        server = try TestServer { [clock] in $0.clock = clock }
    }

    override func tearDown() {
        server.stop()
    }

    /// Signs up `username` and returns the cookie the answer set (`livesignup_auth=…`).
    private func signUp(_ username: String, password: String = "Cobol-Rocks-1959", email: String? = nil) async throws -> String {
        let form = try await server.client.openForm()
        let body = FormURLEncoder.encode([("token", form.token), ("username", username), ("email", email ?? "\(username)@example.org"),
                                          ("password", password), ("confirm", password)])
        let response = try await server.request("POST", "/signup", body: body)
        XCTAssertEqual(response.status, 303, response.body)
        XCTAssertEqual(response.headers["location"], "/welcome", "signed in at once")
        return try XCTUnwrap(response.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
    }

    /// A second app on the same database, as another instance (or this one restarted) is.
    private func secondInstance() throws -> SignupApplication {
        var configuration = SignupApplication.Configuration()
        configuration.port = 0
        configuration.publicDirectory = TestServer.repositoryRoot.appendingPathComponent("Public")
        configuration.templatesDirectory = TestServer.repositoryRoot.appendingPathComponent("Templates")
        configuration.passwordHasher = Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024)
        configuration.clock = clock  // one time for both, as real instances share
        var quiet = Logger(label: "second-instance")
        quiet.logLevel = .critical
        let other = try SignupApplication(
            configuration: configuration, store: try SQLiteAccountStore(path: server.store.path), logger: quiet)
        try other.start()
        return other
    }

    private func auth(_ cookie: String?, at baseURL: URL? = nil) async throws -> (status: Int, headers: [String: String], body: String) {
        try await TestServer.request(to: baseURL ?? server.baseURL, "GET", "/auth", headers: cookie.map { ["Cookie": $0] } ?? [:])
    }

    func testAuthSaysWhoIsSignedInAndNobodyElse() async throws {
        let cookie = try await signUp("Grace")
        let account = try XCTUnwrap(try server.store.account(named: "grace"))
        let signedIn = try await auth(cookie)
        XCTAssertEqual(signedIn.status, 200)
        XCTAssertEqual(signedIn.headers["x-auth-request-user"], "Grace")
        XCTAssertEqual(signedIn.headers["x-auth-request-preferred-username"], "Grace")
        // Nobody proved this address (no mail transport): anybody could have typed it, and two
        // accounts may hold it, so the application must not take it as the person's.
        XCTAssertNil(signedIn.headers["x-auth-request-email"], "an unproved address is not handed on")
        XCTAssertEqual(signedIn.headers["x-auth-request-email-verified"], "false")
        XCTAssertEqual(signedIn.headers["x-auth-request-id"], String(account.id), "the account's stable id")
        XCTAssertEqual(signedIn.body, "", "no body")
        XCTAssertEqual(signedIn.headers["cache-control"], "no-store")

        let sessionsBefore = server.app.sessionCount
        for stranger in [nil, "livesignup_auth=nope", "livesignup_auth=" + String(repeating: "A", count: 43), "other=1"] {
            let answer = try await auth(stranger)
            XCTAssertEqual(answer.status, 401, stranger ?? "no cookie")
            XCTAssertNil(answer.headers["x-auth-request-user"])
            XCTAssertNil(answer.headers["set-cookie"], "no session of any kind is made")
        }
        XCTAssertEqual(server.app.sessionCount, sessionsBefore, "asking makes no form session")
    }

    /// Two accounts typed the same address (nothing proved either): neither is sent it, so an
    /// application that maps people by email cannot sign one in as the other. A name outside
    /// ASCII also arrives in an ASCII-only form (UTF-8, percent-encoded).
    func testTwoAccountsWithOneUnprovedAddressAreTwoIdsAndNoEmail() async throws {
        let victim = try await signUp("Zoë_Owner", email: "zoe@example.org")
        let attacker = try await signUp("mallory", email: "zoe@example.org")
        let victimAuth = try await auth(victim)
        let attackerAuth = try await auth(attacker)
        XCTAssertNotEqual(victimAuth.headers["x-auth-request-id"], attackerAuth.headers["x-auth-request-id"])
        XCTAssertNil(attackerAuth.headers["x-auth-request-email"])
        XCTAssertNil(victimAuth.headers["x-auth-request-email"])
        XCTAssertEqual(victimAuth.headers["x-auth-request-preferred-username"], "Zo%C3%AB_Owner")
        XCTAssertTrue(victimAuth.headers["x-auth-request-preferred-username"]!.utf8.allSatisfy { $0 < 0x80 })
    }

    func testAnotherInstanceOnTheSameStoreKnowsTheSessionAndTheIdIsNeverStored() async throws {
        let cookie = try await signUp("Adalovelace")
        let id = try XCTUnwrap(cookie.split(separator: "=", maxSplits: 1).last.map(String.init))
        let other = try secondInstance()
        defer { other.stop() }
        let there = try await auth(cookie, at: URL(string: "http://127.0.0.1:\(other.port)")!)
        XCTAssertEqual(there.status, 200)
        XCTAssertEqual(there.headers["x-auth-request-user"], "Adalovelace")

        let database = try String(contentsOfFile: server.store.path, encoding: .isoLatin1)
        XCTAssertFalse(database.contains(id), "the cookie's id is not in the database")
        XCTAssertTrue(database.contains(SignInSessionID.hash(id)), "only its hash")
    }

    func testSignOutEndsTheSessionOnTheServerAndClearsTheCookie() async throws {
        let cookie = try await signUp("Linus")
        let out = try await server.request("POST", "/signout", headers: ["Cookie": cookie])
        XCTAssertEqual(out.status, 303)
        XCTAssertEqual(out.headers["location"], "/signin")
        XCTAssertTrue(out.headers["set-cookie"]?.hasPrefix("livesignup_auth=; Path=/; Max-Age=0") == true, out.headers["set-cookie"] ?? "")
        let after = try await auth(cookie)
        XCTAssertEqual(after.status, 401, "a copy of the old cookie is worth nothing")
        let welcome = try await server.request("GET", "/welcome", headers: ["Cookie": cookie])
        XCTAssertEqual(welcome.status, 303, "the welcome page sends a signed-out person to sign in")

        let crossSite = try await server.request("POST", "/signout", headers: ["Cookie": cookie, "Origin": "https://evil.example"])
        XCTAssertEqual(crossSite.status, 403, "another site cannot sign anyone out")
    }

    func testEverySignInIsANewSessionAndRevokeEndsThemAll() async throws {
        let first = try await signUp("Barbara", password: "Liskov-Substitution-1987")
        let body = FormURLEncoder.encode([("username", "barbara"), ("password", "Liskov-Substitution-1987")])
        let signIn = try await server.request("POST", "/signin", body: body, headers: ["Cookie": first])
        let second = try XCTUnwrap(signIn.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        XCTAssertNotEqual(first, second, "a fresh id at every sign-in, whatever cookie came with it")
        let firstAuth = try await auth(first)
        XCTAssertEqual(firstAuth.status, 401, "signing in again ends the session the browser held (ASVS V7.2.4)")
        let elsewhere = try await server.request("POST", "/signin", body: body)
        let third = try XCTUnwrap(elsewhere.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let secondAuth = try await auth(second)
        XCTAssertEqual(secondAuth.status, 200, "a sign-in on another browser leaves this one signed in")
        let thirdAuth = try await auth(third)
        XCTAssertEqual(thirdAuth.status, 200)

        let (status, output, errors) = try ServerProcess.run(["sessions", "revoke", "--database", server.store.path, "--username", "BARBARA"])
        XCTAssertEqual(status, 0, errors)
        XCTAssertTrue(output.contains("Ended 2 signed-in sessions of Barbara."), output)
        // Another process ended them: this instance trusts its recent confirmations for
        // `confirmationLifetime` (5 s) and no longer.
        let stillTrusted = try await auth(second)
        XCTAssertEqual(stillTrusted.status, 200, "within the confirmation window")
        clock.advance(by: SignedInUsers.confirmationLifetime)
        for cookie in [second, third] {
            let answer = try await auth(cookie)
            XCTAssertEqual(answer.status, 401, "revoked on the server, seen once the window is over")
        }
        let unknown = try ServerProcess.run(["sessions", "revoke", "--database", server.store.path, "--username", "nobody"])
        XCTAssertNotEqual(unknown.status, 0)
        XCTAssertTrue((unknown.output + unknown.errors).contains("No account named 'nobody'"), unknown.errors)
    }

    func testAnIdleOrExpiredSessionIsSignedOut() async throws {
        let clock = TestClock()
        let timed = try TestServer {
            $0.clock = clock
            $0.signInLifetime = 3 * 3600
            $0.signInIdleTimeout = 3600
        }
        defer { timed.stop() }
        let form = try await timed.client.openForm()
        let body = FormURLEncoder.encode([("token", form.token), ("username", "katherine"), ("email", "k@example.org"),
                                          ("password", "Apollo-Eleven-1969"), ("confirm", "Apollo-Eleven-1969")])
        let signedUp = try await timed.request("POST", "/signup", body: body)
        let cookie = try XCTUnwrap(signedUp.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        XCTAssertTrue(signedUp.headers["set-cookie"]?.contains("Max-Age=10800") == true, "the cookie lasts the lifetime")
        for _ in 0..<3 {
            clock.advance(by: 50 * 60)  // used every 50 minutes: never idle for an hour
            let answer = try await TestServer.request(to: timed.baseURL, "GET", "/auth", headers: ["Cookie": cookie])
            XCTAssertEqual(answer.status, 200)
        }
        clock.advance(by: 40 * 60)  // 3 h 10 min in, used 40 minutes ago: past the 3 h lifetime
        let expired = try await TestServer.request(to: timed.baseURL, "GET", "/auth", headers: ["Cookie": cookie])
        XCTAssertEqual(expired.status, 401, "past its lifetime however much it was used")
    }

    /// Failed sign-ins per account are counted in the store: guesses spread over two instances
    /// still get only the documented five before each try must wait.
    func testFailedSignInsPerAccountAreCountedAcrossInstances() async throws {
        _ = try await signUp("Hopper", password: "Compiler-Nanosecond-1952")
        let other = try secondInstance()
        defer { other.stop() }
        let instances = [server.baseURL, URL(string: "http://127.0.0.1:\(other.port)")!]
        for attempt in 0..<5 {
            let body = FormURLEncoder.encode([("username", "hopper"), ("password", "guess-\(attempt)")])
            let answer = try await TestServer.request(to: instances[attempt % 2], "POST", "/signin", body: body)
            XCTAssertEqual(answer.status, 401, "guess \(attempt + 1) of the five free ones")
        }
        for instance in instances {
            let body = FormURLEncoder.encode([("username", "hopper"), ("password", "Compiler-Nanosecond-1952")])
            let answer = try await TestServer.request(to: instance, "POST", "/signin", body: body)
            XCTAssertEqual(answer.status, 429, "the sixth try waits on either instance, even with the right password")
            XCTAssertNotNil(answer.headers["retry-after"])
        }
    }
}
