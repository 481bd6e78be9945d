import AccountStoreTestSupport
import Foundation
import HTTPTestSupport
import LiveSignupClient
import SignupPostgres
import XCTest

/// The server process on PostgreSQL while the database goes away and comes back: sign-ups
/// are refused with a readable 503 that keeps what was typed, `/readyz` says why, live forms
/// keep working, and once the database is back the same form signs up, with nothing that was
/// acknowledged before missing.
final class PostgresOutageTests: XCTestCase {
    private static func signUp(_ username: String, token: String, at baseURL: URL) async throws -> (status: Int, body: String) {
        let body = FormURLEncoder.encode([("token", token), ("username", username), ("email", "\(username)@example.com"),
                                          ("password", "Correct-Horse-9-Battery"), ("confirm", "Correct-Horse-9-Battery")])
        let answer = try await TestServer.request(to: baseURL, "POST", "/signup", body: body)
        return (answer.status, answer.body)
    }

    func testWhileTheDatabaseIsDownSignUpsGetA503AndTheSameFormWorksWhenItIsBack() async throws {
        // A cluster of its own: this test stops it.
        let cluster = try PostgresTestCluster()
        defer {
            cluster.stop()
            cluster.remove()
        }
        let database = try cluster.makeDatabase()
        let server = try ServerProcess(arguments: [
            "--argon2-preset", "owasp-minimum", "--hashes-per-address", "100", "--signups-per-address", "off",
            "--pages-per-address", "off", "--sessions-per-address", "off",
        ], database: database)
        defer { server.removeData() }
        try await server.start()
        let base = URL(string: "http://127.0.0.1:\(server.port)")!

        let early = try await SignupClient(baseURL: base).openForm()
        let acknowledged = try await Self.signUp("early", token: early.token, at: base)
        XCTAssertEqual(acknowledged.status, 303, acknowledged.body)

        // Someone is typing when the database goes away.
        let control = try await SignupClient(baseURL: base).openForm()
        let events = EventCollector(control.events())
        defer { events.stop() }
        await events.wait(forCount: 1)
        let form = try await SignupClient(baseURL: base).openForm()

        cluster.stop()
        let notReady = try RawExchange.send(port: server.port, "GET", "/readyz", timeoutSeconds: 20)
        XCTAssertEqual(notReady.status, 503, notReady.body)
        XCTAssertTrue(notReady.body.contains(#""reason":"account_store""#), notReady.body)
        XCTAssertTrue(notReady.body.contains("PostgreSQL at 127.0.0.1:\(cluster.port)"), "says which database: \(notReady.body)")

        let refused = try await Self.signUp("during", token: form.token, at: base)
        XCTAssertEqual(refused.status, 503, refused.body)
        XCTAssertTrue(refused.body.contains("nothing was saved"), refused.body)
        XCTAssertTrue(refused.body.contains(#"value="during""#), "keeps what was typed: \(refused.body)")
        XCTAssertFalse(refused.body.contains("Correct-Horse-9-Battery"), "never echoes the password")

        // The control person's live form is not disturbed: an edit still comes back as events.
        let receipt = try await control.edit("email", to: "control@example.com")
        await events.wait { events in
            events.contains { event in
                if case .requirement(let id, let state, let rev) = event {
                    return id == "email.format" && state == .met && rev == receipt.rev
                }
                return false
            }
        }

        try cluster.start()
        let port = server.port
        let ready = await Condition.wait(timeout: 30) {
            (try? RawExchange.send(port: port, "GET", "/readyz", timeoutSeconds: 10).status) == 200
        }
        XCTAssertTrue(ready, "ready again once the database is back: \(server.log.suffix(1500))")
        let retried = try await Self.signUp("during", token: form.token, at: base)
        XCTAssertEqual(retried.status, 303, "the same form signs up: \(retried.body.prefix(500))")

        let store = try PostgresAccountStore(location: PostgresLocation(url: database))
        XCTAssertEqual(try store.allAccounts().map(\.username).sorted(), ["during", "early"],
                       "nothing acknowledged is missing, nothing is stored twice")
        _ = await server.stop(with: SIGTERM)
    }
}
