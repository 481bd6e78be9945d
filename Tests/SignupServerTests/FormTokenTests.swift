import Foundation
import LiveSignupClient
@testable import SignupServer
import SignupDomain
import XCTest

/// Form tokens prove themselves: only this server's key makes one, any change breaks it, and
/// a plain post works with one of any age, across restarts.
final class FormTokenTests: XCTestCase {
    func testAGenuineTokenVerifiesAndAnyAlterationDoesNot() {
        let authority = FormTokenAuthority(key: FormTokenAuthority.makeKey())
        let issued = Date(timeIntervalSince1970: 1_900_000_000)
        let token = authority.mint(issuedAt: issued)
        XCTAssertEqual(token.count, FormTokenAuthority.length)
        XCTAssertEqual(authority.issueDate(of: token), issued)
        XCTAssertNotEqual(authority.mint(issuedAt: issued), token, "random part differs")

        let characters = Array(token)
        for index in [0, 10, 20, 30, 55] {
            var altered = characters
            altered[index] = altered[index] == "0" ? "1" : "0"
            XCTAssertNil(authority.issueDate(of: String(altered)), "changed at \(index)")
        }
        XCTAssertNil(authority.issueDate(of: token.uppercased()))
        XCTAssertNil(authority.issueDate(of: String(token.dropLast(2))))
        XCTAssertNil(authority.issueDate(of: token + "00"))
        XCTAssertNil(authority.issueDate(of: ""))
        XCTAssertNil(FormTokenAuthority(key: FormTokenAuthority.makeKey()).issueDate(of: token), "another key")
    }

    func testAPlainPostWorksWithATokenOfAnyAgeAcrossARestart() async throws {
        let clock = MovableClock()
        let first = try TestServer { $0.now = { clock.now } }
        let page = try await first.request("GET", "/")
        let token = try XCTUnwrap(page.body.firstMatch(of: #/name="token" value="([0-9a-f]+)"/#)?.1)
        let databasePath = first.store.path
        first.app.stop()

        // A month later, a new process on the same database (the key is kept there).
        clock.advance(by: 30 * 24 * 60 * 60)
        let store = try SQLiteAccountStore(path: databasePath)
        var configuration = SignupApplication.Configuration()
        configuration.port = 0
        configuration.publicDirectory = TestServer.repositoryRoot.appendingPathComponent("Public")
        configuration.templatesDirectory = TestServer.repositoryRoot.appendingPathComponent("Templates")
        configuration.passwordHasher = Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024)
        configuration.now = { clock.now }
        let second = try SignupApplication(configuration: configuration, store: store)
        try second.start()
        defer {
            second.stop()
            first.stop()
        }
        let body = FormURLEncoder.encode([("token", String(token)), ("username", "patient"), ("email", "p@example.com"),
                                          ("password", "Correct-Horse-9"), ("confirm", "Correct-Horse-9")])
        let answer = try await TestServer.request(to: URL(string: "http://127.0.0.1:\(second.port)")!,
                                                  "POST", "/signup", body: body)
        XCTAssertEqual(answer.status, 303, answer.body)
        XCTAssertEqual(try store.account(named: "patient")?.username, "patient")
    }
}
