import Foundation
import GRDB
import LiveSignupClient
import SignupDomain
@testable import Identity
@testable import SignupServer
@testable import WebKernel
import XCTest

/// Issue 52, items 4 and 13: unauthenticated rows cost bounded work, and limits that guard
/// guesses fail closed. A sign-out ends the one session its cookie names (two cookies: one was
/// planted, nothing ends; a header of random ids costs no writes), and sign-outs are limited per
/// address before the cookie is read; a shared limit that cannot be read refuses a guess with a
/// readable 503 instead of judging it for free.
final class SessionEndingTests: XCTestCase {
    private var server: TestServer!
    private let password = "Ending-Well-2024"

    override func setUpWithError() throws {
        server = try TestServer()
    }

    override func tearDown() {
        server.stop()
    }

    private func account(_ username: String) throws {
        let hash = try Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024).hash(password)
        _ = try server.store.createAccount(NewAccount(username: username, email: "\(username)@example.org", passwordHash: hash,
                                                      formToken: "\(username)-form"))
    }

    private func signedIn(_ username: String) async throws -> String {
        let answer = try await server.request("POST", "/signin", body: FormURLEncoder.encode([("username", username),
                                                                                              ("password", password)]))
        XCTAssertEqual(answer.status, 303, answer.body)
        return try XCTUnwrap(answer.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
    }

    private func isLive(_ cookie: String) async throws -> Bool {
        try await server.request("GET", "/auth", headers: ["Cookie": cookie], from: "192.0.2.200").status == 200
    }

    private func signOut(_ cookieHeader: String, from address: String = "127.0.0.1") async throws
        -> (status: Int, headers: [String: String], body: String) {
        try await server.request("POST", "/signout", body: "", headers: ["Cookie": cookieHeader], from: address)
    }

    func testASignOutEndsOnlyTheOneSessionItsCookieNames() async throws {
        try account("first")
        try account("second")
        let first = try await signedIn("first"), second = try await signedIn("second")

        // Two session cookies: one was planted. Both are cleared in this browser, neither ends.
        let planted = try await signOut("\(first); \(second)")
        XCTAssertEqual(planted.status, 303)
        XCTAssertTrue(planted.headers["set-cookie"]?.contains(SignedInUsers.plainCookieName + "=;") == true)
        let firstLive = try await isLive(first), secondLive = try await isLive(second)
        XCTAssertTrue(firstLive && secondLive, "another person's session, planted beside one's own, is not ended")

        // Forty random ids beside a real one: nothing is written, nothing ends.
        let random = (0..<40).map { _ in "\(SignedInUsers.plainCookieName)=\(SignInSessionID.make())" }
        let flood = try await signOut((random + [first]).joined(separator: "; "))
        XCTAssertEqual(flood.status, 303)
        let stillLive = try await isLive(first)
        XCTAssertTrue(stillLive)

        // Exactly one: that session ends, the other stays.
        let own = try await signOut(first)
        XCTAssertEqual(own.status, 303)
        let ended = try await isLive(first), kept = try await isLive(second)
        XCTAssertFalse(ended)
        XCTAssertTrue(kept, "the control session")
    }

    /// Sign-outs naming no live session are counted per address (as `/auth`'s are) and write
    /// nothing: a flood of random cookies is refused after the allowance, and a person signing
    /// out from that very address (a live session never counts) still can.
    func testSignOutsOfNoLiveSessionArePaidPerAddressAndAPersonCanAlwaysSignOut() async throws {
        try account("bystander")
        let bystander = try await signedIn("bystander")
        let burst = Int(SignupLimits().unknownSessionsPerAddress.burst)
        var statuses: [Int: Int] = [:]
        for _ in 0..<(burst + 30) {
            let answer = try await signOut("\(SignedInUsers.plainCookieName)=\(SignInSessionID.make())", from: "203.0.113.9")
            statuses[answer.status, default: 0] += 1
            if answer.status == 429 {
                XCTAssertNotNil(answer.headers["retry-after"])
                XCTAssertTrue(answer.body.contains("a lot of attempts from your network"), answer.body)
            }
        }
        XCTAssertEqual(statuses[303, default: 0] + statuses[429, default: 0], burst + 30)
        XCTAssertGreaterThanOrEqual(statuses[303, default: 0], burst, "\(statuses)")
        XCTAssertGreaterThanOrEqual(statuses[429, default: 0], 20, "refused past the allowance: \(statuses)")
        // The person at that address signs out: a live session is never refused.
        let own = try await signOut(bystander, from: "203.0.113.9")
        XCTAssertEqual(own.status, 303)
        let ended = try await isLive(bystander)
        XCTAssertFalse(ended)
    }

    /// A store whose shared limits cannot be read but whose accounts can (a table broken on
    /// purpose here; a replica or a cache elsewhere): the sign-in is refused with a readable
    /// 503, and its password is never judged for free.
    func testAGuessIsRefusedWhenItsSharedLimitCannotBeRead() async throws {
        try account("sturdy")
        let path = server.databaseDirectory.appendingPathComponent("test.sqlite").path
        try await DatabaseQueue(path: path).write { try $0.execute(sql: "ALTER TABLE shared_buckets RENAME TO shared_buckets_away") }
        let answer = try await server.request("POST", "/signin", body: FormURLEncoder.encode([("username", "sturdy"),
                                                                                              ("password", password)]))
        XCTAssertEqual(answer.status, 503, answer.body)
        XCTAssertNotNil(answer.headers["retry-after"])
        XCTAssertTrue(answer.body.contains("Signing in is not possible right now"), answer.body)
        XCTAssertNil(answer.headers["set-cookie"], "no session")
        // Once the table is back, the same sign-in works: nothing else was disturbed.
        try await DatabaseQueue(path: path).write { try $0.execute(sql: "ALTER TABLE shared_buckets_away RENAME TO shared_buckets") }
        let again = try await server.request("POST", "/signin", body: FormURLEncoder.encode([("username", "sturdy"),
                                                                                             ("password", password)]))
        XCTAssertEqual(again.status, 303, again.body)
    }

    /// Which limits fail closed: those that guard guesses. A mail limit still fails open (the
    /// mail it guards is written to the same store, which then fails on its own).
    func testOnlyTheGuessLimitsFailClosed() {
        struct Unreadable: SharedTokenBuckets {
            struct Down: Error {}
            func spendSharedTokens(bucket: String, key: String, cost: Double, rate: SharedBucketRate, at now: Date) throws -> Double {
                throw Down()
            }
            func resetSharedTokens(bucket: String, key: String) throws { throw Down() }
            func removeFullSharedBuckets(at now: Date) throws -> Int { throw Down() }
        }
        let limiters = ClientLimiters(SignupLimits(), store: Unreadable(), now: { Date() })
        func refusedAsUnavailable(_ guess: () throws(LimitExceeded) -> Void) -> Bool {
            do throws(LimitExceeded) {
                try guess()
                return false
            } catch {
                return error.storeUnavailable
            }
        }
        XCTAssertTrue(refusedAsUnavailable { () throws(LimitExceeded) in try limiters.admitPasswordGuess(clientKey: "c", accountKey: "a") })
        XCTAssertTrue(refusedAsUnavailable { () throws(LimitExceeded) in try limiters.admitCodeGuess(clientKey: "c", accountKey: "a") })
        XCTAssertNoThrow(try limiters.mailsPerRecipient.admit("someone@example.org"))
    }
}
