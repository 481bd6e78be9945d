import AccountStoreTestSupport
import Foundation
import HTTPTestSupport
import LiveSignupClient
import XCTest

/// The server starting before its PostgreSQL does (a machine or a set of containers booting
/// together): it keeps trying for `--database-wait` seconds, saying so in its log, and starts
/// once the database answers; with `--database-wait 0` it gives up at once with a reason.
final class PostgresStartupTests: XCTestCase {
    func testTheServerWaitsForADatabaseThatIsStillStartingThenServes() async throws {
        let cluster = try PostgresTestCluster()
        defer {
            cluster.stop()
            cluster.remove()
        }
        let database = try cluster.makeDatabase()
        cluster.stop()

        let server = try ServerProcess(arguments: ["--database-wait", "120", "--argon2-preset", "owasp-minimum"],
                                       database: database, logLevel: "info")
        defer { server.removeData() }
        try server.launch()
        // `log` reads a locked buffer, so the condition's queue may read it.
        nonisolated(unsafe) let watched = server
        let waiting = await Condition.wait(timeout: 30) { watched.log.contains("Waiting for the database") }
        XCTAssertTrue(waiting, "the log says what it waits for: \(server.log)")
        XCTAssertTrue(server.process.isRunning, "still trying, not exited")

        try cluster.start()
        await server.waitUntilListening(timeout: 60)
        XCTAssertTrue(server.log.contains("The database answered"), server.log)

        let base = URL(string: "http://127.0.0.1:\(server.port)")!
        let ready = try await TestServer.request(to: base, "GET", "/readyz")
        XCTAssertEqual(ready.status, 200, ready.body)
        let form = try await SignupClient(baseURL: base).openForm()
        let body = FormURLEncoder.encode([("token", form.token), ("username", "patient"), ("email", "patient@example.com"),
                                          ("password", "Correct-Horse-9-Battery"), ("confirm", "Correct-Horse-9-Battery")])
        let answer = try await TestServer.request(to: base, "POST", "/signup", body: body)
        XCTAssertEqual(answer.status, 303, answer.body)
    }

    func testWithoutAWaitAnUnreachableDatabaseStopsTheStartWithAReason() throws {
        let cluster = try PostgresTestCluster()
        defer { cluster.remove() }
        let database = try cluster.makeDatabase()
        cluster.stop()

        let result = try ServerProcess.run(["--port", "0", "--database", database, "--database-wait", "0"])
        XCTAssertEqual(result.status, 1, result.errors)
        XCTAssertTrue(result.errors.contains("Could not open the account store"), result.errors)
        XCTAssertTrue(result.errors.contains("cannot be reached") || result.errors.contains("did not answer"), result.errors)
        XCTAssertFalse(result.errors.contains("Waiting for the database"), "no retries with a wait of 0")
    }

    func testTheWaitIsBounded() throws {
        XCTAssertEqual(try ServerProcess.run(["--database-wait", "-1"]).status, 64)
        let refused = try ServerProcess.run(["--database-wait", "3601"])
        XCTAssertEqual(refused.status, 64)
        XCTAssertTrue(refused.errors.contains("--database-wait must be 0 to 3600 seconds."), refused.errors)
    }
}
