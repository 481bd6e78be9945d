import AccountStoreTestSupport
import Foundation
import HTTPTestSupport
import LiveSignupClient
import SignupDomain
import SignupPostgres
import XCTest

/// Two real server processes on one PostgreSQL database behind nginx with the shipped
/// multi-instance configuration (deploy/nginx/livesignup-instances.conf): people sign up
/// through nginx at once, the same name is raced through both instances, and one instance is
/// killed while people are typing on it. Every sign-up completes exactly once.
final class MultiInstanceTests: XCTestCase {
    private var directory: URL!
    private var nginxProcess: Process?
    private var instances: [ServerProcess] = []

    override func setUpWithError() throws {
        guard NginxProxyTests.nginx != nil else {
            throw Prerequisite.missing("nginx is not installed (make test installs Debian's nginx-light): the multi-instance test needs it")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-multi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let nginxProcess, nginxProcess.isRunning {
            kill(nginxProcess.processIdentifier, SIGKILL)
            nginxProcess.waitUntilExit()
        }
        for instance in instances { instance.removeData() }
        // nil when setUp stopped for a missing prerequisite (tearDown runs all the same).
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private static let instancesConf = TestServer.repositoryRoot
        .appendingPathComponent("deploy/nginx/livesignup-instances.conf")

    /// An instance on the shared database, with per-address limits off: every request comes
    /// from nginx on one address, and this test is about routing, not abuse.
    private func startInstance(_ id: String, database: String) async throws -> ServerProcess {
        let instance = try ServerProcess(arguments: [
            "--instance-id", id, "--trusted-proxy", "127.0.0.1", "--connections-per-address", "0",
            "--argon2-preset", "owasp-minimum", "--pages-per-address", "off", "--sessions-per-address", "off",
            "--edits-per-address", "off", "--lookups-per-address", "off", "--signups-per-address", "off",
            "--hashes-per-address", "100",
        ], database: database)
        instances.append(instance)
        try await instance.start()
        return instance
    }

    /// nginx with the shipped files: the instances file with the example ports replaced by
    /// the real ones, and the proxy locations as they are.
    private func startNginx(web1: UInt16, web2: UInt16) async throws -> URL {
        let routing = try String(contentsOf: Self.instancesConf, encoding: .utf8)
            .replacingOccurrences(of: "127.0.0.1:8081", with: "127.0.0.1:\(web1)")
            .replacingOccurrences(of: "127.0.0.1:8082", with: "127.0.0.1:\(web2)")
        let proxyPort = try NginxProxyTests.freePort()
        let configuration = directory.appendingPathComponent("nginx.conf")
        try NginxProxyTests.mainConfiguration(in: directory, """
            \(routing)
            server {
                listen 127.0.0.1:\(proxyPort);
                include \(NginxProxyTests.proxyConf.path);
            }
        """).write(to: configuration, atomically: true, encoding: .utf8)
        nginxProcess = try NginxProxyTests.launchNginx(in: directory, configuration: configuration)
        let ready = await Condition.wait(timeout: 10) {
            (try? RawExchange.send(port: proxyPort, "GET", "/healthz").status) == 200
        }
        XCTAssertTrue(ready, "nginx answers: \(nginxErrors)")
        return URL(string: "http://127.0.0.1:\(proxyPort)")!
    }

    private var nginxErrors: String {
        (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    /// One person's values; `username` is unique per person.
    private struct Person: Sendable {
        let username: String
        var email: String { "\(username)@example.com" }
        let password = "Correct-Horse-9-Battery"

        var values: [(field: String, value: String)] {
            [("username", username), ("email", email), ("password", password), ("confirm", password)]
        }
    }

    /// Types each value a few keystrokes at a time (each keystroke an edit with the whole
    /// value so far), as the page does.
    private static func type(_ values: ArraySlice<(field: String, value: String)>, into form: FormSession) async throws {
        for (field, value) in values {
            for length in Set([1, value.count / 2, value.count]).sorted() {
                let receipt = try await form.edit(field, to: String(value.prefix(length)))
                XCTAssertGreaterThan(receipt.rev, 0)
            }
        }
    }

    /// The plain sign-up post; its status.
    private static func signUp(_ person: Person, token: String, at baseURL: URL) async throws -> (status: Int, body: String) {
        let body = FormURLEncoder.encode([("token", token), ("username", person.username), ("email", person.email),
                                          ("password", person.password), ("confirm", person.password)])
        let answer = try await TestServer.request(to: baseURL, "POST", "/signup", body: body)
        return (answer.status, answer.body)
    }

    func testSignupsThroughNginxAcrossTwoInstancesSurviveOneBeingKilled() async throws {
        let cluster = try PostgresTestCluster.shared()
        let database = try cluster.makeDatabase()
        let web1 = try await startInstance("web1", database: database)
        let web2 = try await startInstance("web2", database: database)
        let proxy = try await startNginx(web1: web1.port, web2: web2.port)
        let direct1 = URL(string: "http://127.0.0.1:\(web1.port)")!
        let direct2 = URL(string: "http://127.0.0.1:\(web2.port)")!

        // 1. Sixteen people at once, all through nginx: pages come from either instance, and
        //    each form's edits reach the instance that holds its session.
        let crowd = (0..<16).map { Person(username: "crowd\($0)") }
        let crowdTokens = try await withThrowingTaskGroup(of: (String, Int, String).self) { group in
            for person in crowd {
                group.addTask {
                    let form = try await SignupClient(baseURL: proxy).openForm()
                    try await Self.type(person.values[...], into: form)
                    let answer = try await Self.signUp(person, token: form.token, at: proxy)
                    return (form.token, answer.status, answer.body)
                }
            }
            var results: [(String, Int, String)] = []
            for try await result in group { results.append(result) }
            return results
        }
        XCTAssertEqual(crowdTokens.map { $0.1 }, Array(repeating: 303, count: 16),
                       "everyone signed up: \(web1.log.suffix(1500)) \(web2.log.suffix(1500))")
        let servedBy = Set(crowdTokens.map { String($0.0.prefix { $0 != "." }) })
        XCTAssertEqual(servedBy, ["web1", "web2"], "nginx spread the pages over both instances")

        // 2. One name, ten submits at once, half through each instance directly: one wins.
        let racers = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<10 {
                group.addTask {
                    let base = index.isMultiple(of: 2) ? direct1 : direct2
                    let form = try await SignupClient(baseURL: base).openForm()
                    let person = Person(username: index.isMultiple(of: 3) ? "Contested" : "contested")
                    return try await Self.signUp(person, token: form.token, at: base).status
                }
            }
            var statuses: [Int] = []
            for try await status in group { statuses.append(status) }
            return statuses.sorted()
        }
        XCTAssertEqual(racers, [303] + Array(repeating: 422, count: 9), "exactly one account for the name")

        // 3. Eight people whose forms live on web1 type half their values through nginx;
        //    web1 is killed; their next edit reaches web2 (web1's backup), which does not
        //    know the token; like the page, they take a fresh token through nginx, re-send
        //    what they typed, finish and sign up.
        let typists = (0..<8).map { Person(username: "typist\($0)") }
        var forms: [FormSession] = []
        for person in typists {
            let token = try await SignupClient(baseURL: direct1).openForm().token
            XCTAssertTrue(token.hasPrefix("web1."), token)
            let form = FormSession(client: SignupClient(baseURL: proxy), token: token)
            try await Self.type(person.values.prefix(2), into: form)
            forms.append(form)
        }
        let killed = await web1.stop(with: SIGKILL)
        XCTAssertTrue(killed, "web1 is gone")

        let recovered = try await withThrowingTaskGroup(of: (String, Int).self) { group in
            for (person, form) in zip(typists, forms) {
                group.addTask {
                    do {
                        _ = try await form.edit("password", to: "C")
                        XCTFail("an edit for a dead instance's form was accepted")
                    } catch SignupClientError.http(let status, let code, let message) {
                        XCTAssertEqual(status, 404, message ?? "")
                        XCTAssertEqual(code, "unknown_session")
                    }
                    let fresh = try await SignupClient(baseURL: proxy).openForm()
                    try await Self.type(person.values[...], into: fresh)
                    let answer = try await Self.signUp(person, token: fresh.token, at: proxy)
                    return (fresh.token, answer.status)
                }
            }
            var results: [(String, Int)] = []
            for try await result in group { results.append(result) }
            return results
        }
        XCTAssertEqual(recovered.map { $0.1 }, Array(repeating: 303, count: 8), "everyone recovered and signed up")
        XCTAssertTrue(recovered.allSatisfy { $0.0.hasPrefix("web2.") }, "fresh forms come from the survivor")

        // Every person exactly once, nobody else, as the database has it.
        let store = try PostgresAccountStore(location: PostgresLocation(url: database))
        let names = try store.allAccounts().map(\.username)
        let expected = crowd.map(\.username) + ["contested", "Contested"].filter { names.contains($0) } + typists.map(\.username)
        XCTAssertEqual(names.sorted(), expected.sorted(), "nginx: \(nginxErrors.suffix(800))")
        XCTAssertEqual(Set(names.map(Username.canonical)).count, names.count, "no name twice")
    }
}
