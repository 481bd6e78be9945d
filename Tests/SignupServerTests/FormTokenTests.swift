import Clocks
import Foundation
import LiveSignupClient
@testable import Identity
@testable import SignupServer
import SignupDomain
import SignupSQLite
import XCTest

/// Form tokens prove themselves: only this server's key makes one, any change breaks it, and
/// a plain post works with one of any age, across restarts.
final class FormTokenTests: XCTestCase {
    func testAGenuineTokenVerifiesAndAnyAlterationDoesNot() {
        let key = FormTokenAuthority.makeKey()
        let authority = FormTokenAuthority(key: key, instance: "web-1")
        let issued = Date(timeIntervalSince1970: 1_900_000_000)
        let token = authority.mint(issuedAt: issued)
        XCTAssertTrue(token.hasPrefix("web-1."), token)
        XCTAssertEqual(token.count, "web-1.".count + FormTokenAuthority.signedLength)
        XCTAssertEqual(authority.issue(of: token), .init(instance: "web-1", date: issued))
        XCTAssertNotEqual(authority.mint(issuedAt: issued), token, "random part differs")

        let characters = Array(token)
        for index in [6, 16, 26, 36, 61] {
            var altered = characters
            altered[index] = altered[index] == "0" ? "1" : "0"
            XCTAssertNil(authority.issue(of: String(altered)), "changed at \(index)")
        }
        XCTAssertNil(authority.issue(of: token.uppercased()))
        XCTAssertNil(authority.issue(of: String(token.dropLast(2))))
        XCTAssertNil(authority.issue(of: token + "00"))
        XCTAssertNil(authority.issue(of: ""))
        XCTAssertNil(authority.issue(of: String(token.dropFirst("web-1.".count))), "no instance id")
        XCTAssertNil(FormTokenAuthority(key: FormTokenAuthority.makeKey(), instance: "web-1").issue(of: token), "another key")

        // Another instance with the same key reads the token and sees whose it is; the
        // instance id is signed, so moving a token to another instance's name breaks it.
        let other = FormTokenAuthority(key: key, instance: "web-2")
        XCTAssertEqual(other.issue(of: token)?.instance, "web-1")
        XCTAssertNil(other.issue(of: "web-2." + token.dropFirst("web-1.".count)))
        XCTAssertNil(other.issue(of: "WEB-1." + token.dropFirst("web-1.".count)))
        // One token, one spelling: a combining mark after the dot made one Character with it,
        // and the signed part was found after both (Tests/Fuzz/corpus/link-code).
        XCTAssertNil(authority.issue(of: "web-1.\u{301}" + token.dropFirst("web-1.".count)))
    }

    func testInstanceIDsAreCheckedAndTheDefaultComesFromTheHostName() {
        XCTAssertTrue(InstanceID.isValid("a"))
        XCTAssertTrue(InstanceID.isValid("web-1"))
        XCTAssertTrue(InstanceID.isValid(String(repeating: "x", count: 32)))
        for bad in ["", "Web1", "web.1", "web_1", "wéb", String(repeating: "x", count: 33)] {
            XCTAssertFalse(InstanceID.isValid(bad), bad)
            XCTAssertNotNil(InstanceID.problem(with: bad))
        }
        XCTAssertEqual(InstanceID.fromHostName("Web-1.example.com"), "web-1")
        XCTAssertEqual(InstanceID.fromHostName("app_server"), "app-server")
        XCTAssertEqual(InstanceID.fromHostName(String(repeating: "h", count: 40)), String(repeating: "h", count: 32))
        XCTAssertEqual(InstanceID.fromHostName(""), "livesignup")
        XCTAssertEqual(InstanceID.fromHostName("__"), "livesignup")
        XCTAssertTrue(InstanceID.isValid(InstanceID.fromHostName()), "this machine's default is usable")
    }

    /// Behind a proxy a form's live requests reach the instance that minted its token while
    /// it runs. If that instance is gone, another one must not adopt the token (its stream
    /// and edits would be split between two places once the first comes back): it answers
    /// 404 unknown_session, the page takes a fresh token here and re-sends its values. A plain
    /// post with the other instance's token is still accepted.
    func testAnotherInstancesTokenIsUnknownForLiveUseButGoodForAPlainPost() async throws {
        let key = FormTokenAuthority.makeKey()
        let first = try TestServer {
            $0.formTokenKey = key
            $0.instanceID = "one"
        }
        defer { first.stop() }
        let second = try TestServer {
            $0.formTokenKey = key
            $0.instanceID = "two"
        }
        defer { second.stop() }
        let token = try await SignupClient(baseURL: first.baseURL).openForm().token
        XCTAssertTrue(token.hasPrefix("one."), token)

        let foreign = FormSession(client: second.client, token: token)
        do {
            _ = try await foreign.edit("email", to: "a@example.com")
            XCTFail("another instance's token started a session")
        } catch SignupClientError.http(let status, let code, _) {
            XCTAssertEqual(status, 404)
            XCTAssertEqual(code, "unknown_session")
        }
        let stream = try await second.request("GET", "/events?token=\(token)")
        XCTAssertEqual(stream.status, 404)

        // Its own fresh token works there, and the plain post takes the first one's token.
        let fresh = try await SignupClient(baseURL: second.baseURL).openForm()
        XCTAssertTrue(fresh.token.hasPrefix("two."))
        let applied = try await fresh.edit("email", to: "a@example.com").applied
        XCTAssertTrue(applied)
        let body = FormURLEncoder.encode([("token", token), ("username", "crossed"), ("email", "c@example.com"),
                                          ("password", "Correct-Horse-9"), ("confirm", "Correct-Horse-9")])
        let posted = try await second.request("POST", "/signup", body: body)
        XCTAssertEqual(posted.status, 303, posted.body)
    }

    /// `POST /fields?token=…` (how the page sends edits, so a proxy can route them) works
    /// alone or with the same token in the body; two different tokens are refused.
    func testTheEditTokenMayComeInTheURLButMustAgreeWithTheBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let token = try await server.client.openForm().token
        let inURL = try await server.request("POST", "/fields?token=\(token)", body: "field=email&value=a%40b.example&seq=1")
        XCTAssertEqual(inURL.status, 202, inURL.body)
        let both = try await server.request("POST", "/fields?token=\(token)", body: "token=\(token)&field=email&value=b&seq=2")
        XCTAssertEqual(both.status, 202, both.body)
        let other = try await server.client.openForm().token
        let mismatch = try await server.request("POST", "/fields?token=\(other)", body: "token=\(token)&field=email&value=c&seq=3")
        XCTAssertEqual(mismatch.status, 400)
        XCTAssertTrue(mismatch.body.contains("token_mismatch"), mismatch.body)
        let neither = try await server.request("POST", "/fields", body: "field=email&value=c&seq=3")
        XCTAssertEqual(neither.status, 400)
        XCTAssertTrue(neither.body.contains("missing_parameter"), neither.body)
    }

    func testAPlainPostWorksWithATokenOfAnyAgeAcrossARestart() async throws {
        let clock = TestClock()
        let first = try TestServer { $0.clock = clock }
        let page = try await first.request("GET", "/")
        let token = try XCTUnwrap(page.body.firstMatch(of: #/name="token" value="([a-z0-9-]+\.[0-9a-f]{56})"/#)?.1)
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
        configuration.clock = clock
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
