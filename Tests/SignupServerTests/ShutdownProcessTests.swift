import Foundation
import HTTPTestSupport
import SignupDomain
import SignupSQLite
import XCTest

/// SIGTERM while sign-ups are hashing (real argon2id, the defaults): every request gets an
/// answer, 303 only for accounts that are stored, and the process exits 0 without crashing.
final class ShutdownProcessTests: XCTestCase {
    func testSIGTERMWithSignupsInFlightAnswersEveryoneAndExitsZero() async throws {
        let server = try ServerProcess(arguments: [
            "--shutdown-grace", "1", "--signups-per-address", "off", "--hashes-per-address", "100",
            "--pages-per-address", "off",
        ])
        defer { server.removeData() }
        try await server.start()
        let port = server.port

        // 40 sign-ups posted at once; with two hashes at a time (about 0.1 s each) they
        // take around two seconds, so most are still waiting when SIGTERM comes.
        var posts: [RawHTTPConnection] = []
        for index in 0..<40 {
            let page = try RawExchange.send(port: port, "GET", "/").body
            let token = try XCTUnwrap(page.firstMatch(of: #/name="token" value="([a-z0-9-]+\.[0-9a-f]{56})"/#)?.1)
            let body = "token=\(token)&username=person\(index)&email=p\(index)%40example.com"
                + "&password=Correct-Horse-9&confirm=Correct-Horse-9"
            let connection = try RawHTTPConnection(port: port, timeoutSeconds: 20)
            connection.send("POST /signup HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                            + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            posts.append(connection)
        }
        // Wait until the first account is answered: the rest are queued or hashing.
        XCTAssertTrue(posts[0].read(timeout: 20) { $0.contains("\r\n\r\n") })

        let exited = await server.stop(with: SIGTERM)
        XCTAssertTrue(exited, "the process exited")
        XCTAssertEqual(server.process.terminationReason, .exit, "not killed by a signal (SIGABRT before)")
        XCTAssertEqual(server.process.terminationStatus, 0)

        var created: [String] = []
        var statuses: [Int: Int] = [:]
        for (index, connection) in posts.enumerated() {
            _ = connection.readUntilClosed()
            let status = Int(connection.received.split(separator: " ").dropFirst().first ?? "") ?? 0
            statuses[status, default: 0] += 1
            if status == 303 { created.append("person\(index)") }
            // Either page a 503 can be here says so: the sign-up's own form ("…nothing was
            // saved…") for jobs cancelled before hashing, or the restart page ("Nothing you
            // submitted was saved.") for jobs still hashing when the grace ran out.
            if status == 503 {
                XCTAssertTrue(connection.received.localizedCaseInsensitiveContains("nothing"),
                              "a readable 503 page: \(connection.received.suffix(600))")
            }
        }
        XCTAssertEqual(statuses[303, default: 0] + statuses[503, default: 0], 40, "every request answered: \(statuses)")
        XCTAssertGreaterThan(statuses[503, default: 0], 0, "work not started was refused: \(statuses)")

        let stored = try SQLiteAccountStore(path: server.databasePath).allAccounts().map(\.username)
        XCTAssertEqual(Set(stored), Set(created), "exactly the acknowledged accounts are stored")
    }
}
