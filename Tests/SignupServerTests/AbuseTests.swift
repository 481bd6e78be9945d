import Foundation
import HTTPTestSupport
import LiveSignupClient
import MicroHTTPD
import Logging
import SignupDomain
import SignupSQLite
import SignupServer
import XCTest

/// Attacks tried against the running server, each followed by the check that nobody else
/// was disturbed: an open control session still gets its events, `GET /` still answers, and
/// the account count is what it should be. Attackers come from 127.0.0.2, the control from
/// 127.0.0.1 (both loopback, two addresses as far as limits go).
final class AbuseTests: XCTestCase {
    static let attacker = "127.0.0.2"

    /// A control form with an open stream that has received its snapshot.
    private func controlSession(_ server: TestServer) async throws -> (form: FormSession, events: EventCollector) {
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        return (form, events)
    }

    /// The control session is undisturbed: an edit is applied and its event arrives.
    private func assertUndisturbed(_ control: (form: FormSession, events: EventCollector), _ server: TestServer,
                                   file: StaticString = #filePath, line: UInt = #line) async throws {
        let before = control.events.events.count
        let receipt = try await control.form.edit("email", to: "control-\(UUID().uuidString.prefix(6))@example.com")
        XCTAssertTrue(receipt.applied, "the control edit applied", file: file, line: line)
        await control.events.wait(file: file, line: line) { $0.count > before }
        let page = try await server.request("GET", "/")
        XCTAssertEqual(page.status, 200, "GET / still answers", file: file, line: line)
    }

    private static func token(in page: String) throws -> String {
        try XCTUnwrap(page.firstMatch(of: #/name="token" value="([a-z0-9-]+\.[0-9a-f]{56})"/#).map { String($0.1) })
    }

    private func attackerToken(_ server: TestServer) throws -> String {
        try Self.token(in: RawExchange.send(port: server.app.port, from: Self.attacker, "GET", "/").body)
    }

    // MARK: 1. Session flood

    func testAPageFloodFromOneAddressCostsNoSessionsAndGetsCheap429s() async throws {
        let server = try TestServer { $0.limits.pagesPerAddress = .per(second: 1, burst: 20) }
        defer { server.stop() }
        let control = try await controlSession(server)
        var statuses: [Int: Int] = [:]
        var retryAfter: String?
        for _ in 0..<200 {
            let answer = try RawExchange.send(port: server.app.port, from: Self.attacker, "GET", "/")
            statuses[answer.status, default: 0] += 1
            if answer.status == 429 {
                retryAfter = answer.headers["retry-after"]
                XCTAssertTrue(answer.body.contains("Please slow down"), "a readable page")
            }
        }
        XCTAssertEqual(statuses[200, default: 0] + statuses[429, default: 0], 200, "\(statuses)")
        XCTAssertGreaterThanOrEqual(statuses[429, default: 0], 150, "\(statuses)")
        XCTAssertNotNil(retryAfter.flatMap(Int.init))
        XCTAssertEqual(server.app.sessionCount, 1, "page views hold no sessions; only the control's exists")
        try await assertUndisturbed(control, server)
    }

    func testSessionsBuiltFromOneAddressAreCappedAndOthersStillGetOne() async throws {
        let server = try TestServer {
            $0.limits.pagesPerAddress = .unlimited
            $0.limits.newSessionsPerAddress = .per(minute: 1, burst: 10)
        }
        defer { server.stop() }
        let control = try await controlSession(server)
        var statuses: [Int] = []
        for _ in 0..<30 {
            let token = try attackerToken(server)
            let edit = try RawExchange.send(port: server.app.port, from: Self.attacker, "POST", "/fields",
                                            body: "token=\(token)&field=username&value=x&seq=1")
            statuses.append(edit.status)
            if edit.status == 429 {
                XCTAssertTrue(edit.body.contains(#""limit":"sessions""#), edit.body)
                XCTAssertNotNil(edit.headers["retry-after"])
            }
        }
        XCTAssertEqual(statuses.filter { $0 == 202 }.count, 10, "\(statuses)")
        XCTAssertEqual(statuses.filter { $0 == 429 }.count, 20, "\(statuses)")
        XCTAssertEqual(server.app.sessionCount, 11)
        try await assertUndisturbed(control, server)
    }

    func testWhenFullTheOldestIdleSessionWithoutAStreamGivesWay() async throws {
        let clock = TestClock()
        let server = try TestServer {
            $0.maximumSessions = 3
            $0.clock = clock
        }
        defer { server.stop() }
        let control = try await controlSession(server)   // has a stream: never evicted
        let oldest = try await server.client.openForm()
        _ = try await oldest.edit("username", to: "oldest")
        clock.advance(by: 60)
        let newer = try await server.client.openForm()
        _ = try await newer.edit("username", to: "newer")
        XCTAssertEqual(server.app.sessionCount, 3)

        clock.advance(by: 60)
        let newcomer = try await server.client.openForm()
        let receipt = try await newcomer.edit("username", to: "newcomer")
        XCTAssertTrue(receipt.applied, "a newcomer is served, not refused")
        XCTAssertEqual(server.app.sessionCount, 3)
        try await assertUndisturbed(control, server)
        // The evicted page's token still works: it gets a fresh session (the page re-sends).
        let events = EventCollector(oldest.events())
        let first = await events.wait(forCount: 1)
        guard case .snapshot(let snapshot) = first[0] else { return XCTFail("expected a snapshot") }
        XCTAssertEqual(snapshot.requirements["username.length"], .unmet, "the oldest one was the one evicted")
    }

    func testWhenEverySessionHasAStreamNewOnesGet503() async throws {
        let server = try TestServer { $0.maximumSessions = 2 }
        defer { server.stop() }
        let first = try await controlSession(server)
        // Kept to the end: a stream whose client is gone is noticed at once and no longer
        // holds its session.
        let second = try await controlSession(server)
        defer { withExtendedLifetime(second) {} }
        let late = try await server.client.openForm()
        let answer = try await server.request("POST", "/fields", body: "token=\(late.token)&field=email&value=a&seq=1")
        XCTAssertEqual(answer.status, 503)
        XCTAssertTrue(answer.body.contains("too_many_sessions"))
        XCTAssertNotNil(answer.headers["retry-after"])
        try await assertUndisturbed(first, server)
    }

    // MARK: Edits and enumeration

    func testAnEditFloodGets429JSONAndLeavesOtherFormsAlone() async throws {
        let server = try TestServer { $0.limits.editsPerSession = .per(second: 1, burst: 5) }
        defer { server.stop() }
        let control = try await controlSession(server)
        let token = try attackerToken(server)
        var limited: RawExchange?
        for seq in 1...20 {
            let edit = try RawExchange.send(port: server.app.port, from: Self.attacker, "POST", "/fields",
                                            body: "token=\(token)&field=email&value=\(seq)&seq=\(seq)")
            if edit.status == 429 { limited = edit; break }
            XCTAssertEqual(edit.status, 202)
        }
        let answer = try XCTUnwrap(limited, "the flood was limited")
        XCTAssertEqual(answer.headers["content-type"], "application/json")
        XCTAssertTrue(answer.body.contains(#""error":"rate_limited""#), answer.body)
        XCTAssertTrue(answer.body.contains(#""limit":"edits""#), answer.body)
        XCTAssertEqual(answer.headers["retry-after"], "1")
        try await assertUndisturbed(control, server)
    }

    func testPostingFormsAnswersTakenNoFasterThanTheLiveCheck() async throws {
        let server = try TestServer {
            $0.limits.lookupsPerAddress = .per(minute: 1, burst: 5)
            $0.limits.lookupsPerSession = .unlimited
        }
        defer { server.stop() }
        let control = try await controlSession(server)
        var answers: [Int] = []
        for name in ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"] {
            let token = try attackerToken(server)
            let answer = try RawExchange.send(port: server.app.port, from: Self.attacker, "POST", "/signup",
                                              body: "token=\(token)&username=\(name)&email=&password=&confirm=")
            answers.append(answer.status)
            if answer.status == 429 {
                XCTAssertFalse(answer.body.contains("That username is taken"), "a limited answer says nothing about the name")
                XCTAssertNotNil(answer.headers["retry-after"])
            }
        }
        XCTAssertEqual(answers, [422, 422, 422, 422, 422, 429, 429, 429])
        XCTAssertEqual(try server.store.allAccounts().count, TestServer.takenUsernames.count, "nothing was created")
        try await assertUndisturbed(control, server)
    }

    /// Over its budget a live look-up waits its turn instead of failing: with the form's budget
    /// at one look-up and four a second, the second name's look-up is put off a quarter second
    /// on the clock, and is answered once the clock gets there.
    func testLiveLookupsOverTheBudgetWaitTheirTurnAndStillAnswer() async throws {
        let clock = TestClock()
        let server = try TestServer {
            $0.clock = clock
            $0.limits.lookupsPerSession = .per(second: 4, burst: 1)
        }
        defer { server.stop() }
        let form = try await server.client.openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        // Within the budget: due at once (the clock runs it as soon as it is asked to move).
        let scheduledBefore = clock.waiting
        _ = try await form.edit("username", to: "alice")
        let firstScheduled = await Condition.wait(timeout: 5) { clock.waiting > scheduledBefore }
        XCTAssertTrue(firstScheduled, "the first look-up was never scheduled")
        clock.advance(by: 0)
        await events.wait { Self.availability(in: $0) == .unmet }

        // Over budget now: this look-up is put off a quarter second, not refused.
        let turn = clock.now.addingTimeInterval(0.25)
        _ = try await form.edit("username", to: "zelda")
        let waitsItsTurn = await Condition.wait(timeout: 5) {
            clock.dueTimes.contains { abs($0.timeIntervalSince(turn)) < 0.001 }
        }
        XCTAssertTrue(waitsItsTurn, "the second look-up was not put off a quarter second: \(clock.dueTimes)")
        clock.advance(by: 0.25)
        await events.wait { Self.availability(in: $0) == .met }
    }

    static func availability(in events: [SignupEvent]) -> LiveSignupClient.RequirementState? {
        for event in events.reversed() {
            if case .requirement(let id, let state, _) = event, id == "username.available" { return state }
        }
        return nil
    }

    // MARK: Sign-in guessing

    func testSignInGuessingBacksOffPerAccountIsLoggedAndNeverLogsThePassword() async throws {
        let log = CapturedLog()
        var logger = Logger(label: "abuse-test") { _ in CapturingLogHandler(lines: log) }
        logger.logLevel = .info
        let server = try TestServer(logger: logger) {
            $0.limits.signinFailuresPerAccount = .per(minute: 1, burst: 3)
        }
        defer { server.stop() }
        try await createAccount(server, username: "victim", password: "Right-Horse-Battery-7")
        try await createAccount(server, username: "bystander", password: "Other-Horse-Battery-7")

        var statuses: [Int] = []
        for attempt in 1...5 {
            let answer = try RawExchange.send(port: server.app.port, from: Self.attacker, "POST", "/signin",
                                              body: "username=victim&password=guess-\(attempt)")
            statuses.append(answer.status)
            if answer.status == 429 {
                XCTAssertTrue(answer.body.contains("Too many failed sign-ins"))
                XCTAssertNotNil(answer.headers["retry-after"])
            }
        }
        XCTAssertEqual(statuses, [401, 401, 401, 429, 429])
        // Even the right password waits now (that is the point of backing off)…
        let right = try RawExchange.send(port: server.app.port, from: Self.attacker, "POST", "/signin",
                                         body: "username=victim&password=Right-Horse-Battery-7")
        XCTAssertEqual(right.status, 429)
        // …but another account is not affected.
        let other = try await server.request("POST", "/signin", body: "username=bystander&password=Other-Horse-Battery-7")
        XCTAssertEqual(other.status, 303)

        let lines = log.all
        XCTAssertEqual(lines.filter { $0.contains("Sign-in failed") && $0.contains("victim") }.count, 3)
        XCTAssertTrue(lines.contains { $0.contains("too many failures") })
        XCTAssertFalse(lines.contains { $0.contains("guess-") || $0.contains("Right-Horse") }, "no password in the log")
    }

    func testAFloodOfGuessesCannotDelayASignUp() async throws {
        let server = try TestServer {
            $0.limits.signinFailuresPerAddress = .unlimited
            $0.limits.signinFailuresPerAccount = .unlimited
            $0.maximumConcurrentHashes = 1
            // Slow enough (tens of ms) that the guesses really queue.
            $0.passwordHasher = Argon2idPasswordHasher(opsLimit: 2, memLimitBytes: 32 * 1024 * 1024)
        }
        defer { server.stop() }
        let control = try await controlSession(server)
        // 40 guesses sent at once from one address: it may have two hashes waiting, the rest
        // are refused at once instead of queueing in front of everyone.
        var guesses: [RawHTTPConnection] = []
        for attempt in 0..<40 {
            let connection = try RawHTTPConnection(port: server.app.port, from: Self.attacker, timeoutSeconds: 20)
            // An unknown name is checked against a real hash (a reserved one is refused at once).
            let body = "username=nosuchuser&password=guess-\(attempt)"
            connection.send("POST /signin HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"
                            + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            guesses.append(connection)
        }
        let response = try await server.request(
            "POST", "/signup",
            body: FormURLEncoder.encode([("token", control.form.token), ("username", "realperson"),
                                         ("email", "real@example.com"), ("password", "Correct-Horse-9"),
                                         ("confirm", "Correct-Horse-9")]))
        XCTAssertEqual(response.status, 303)

        let statuses = guesses.map { connection -> Int in
            _ = connection.readUntilClosed()
            return Int(connection.received.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        XCTAssertTrue(statuses.allSatisfy { $0 == 401 || $0 == 429 }, "every guess was answered: \(statuses)")
        XCTAssertGreaterThanOrEqual(statuses.filter { $0 == 429 }.count, 30, "\(statuses)")
    }

    private func createAccount(_ server: TestServer, username: String, password: String) async throws {
        let form = try await server.client.openForm()
        let response = try await server.request(
            "POST", "/signup",
            body: FormURLEncoder.encode([("token", form.token), ("username", username), ("email", "\(username)@example.com"),
                                         ("password", password), ("confirm", password)]))
        XCTAssertEqual(response.status, 303, response.body)
    }

    // MARK: Storage faults

    func testADeletedDatabaseGives503AndALogLineAndRecoversWhenRestored() async throws {
        let log = CapturedLog()
        var logger = Logger(label: "abuse-test") { _ in CapturingLogHandler(lines: log) }
        logger.logLevel = .warning
        let server = try TestServer(logger: logger) { $0.limits.signupsPerAddress = .unlimited }
        defer { server.stop() }
        let control = try await controlSession(server)
        try await createAccount(server, username: "beforefault", password: "Correct-Horse-9")
        let path = server.store.path
        let backup = server.databaseDirectory.deletingLastPathComponent().appendingPathComponent("backup-\(UUID()).sqlite")
        defer { try? FileManager.default.removeItem(at: backup) }
        try FileManager.default.copyItem(atPath: path, toPath: backup.path)

        try FileManager.default.removeItem(at: server.databaseDirectory)
        let form = try await server.client.openForm()
        let body = FormURLEncoder.encode([("token", form.token), ("username", "duringfault"), ("email", "d@example.com"),
                                          ("password", "Correct-Horse-9"), ("confirm", "Correct-Horse-9")])
        let refused = try await server.request("POST", "/signup", body: body)
        XCTAssertEqual(refused.status, 503)
        XCTAssertTrue(refused.body.contains("nothing was saved"))
        XCTAssertTrue(refused.body.contains(#"value="duringfault""#), "what was typed is kept")
        XCTAssertTrue(log.all.contains { $0.contains("error") && $0.contains("deleted") }, "\(log.all)")
        try await assertUndisturbed(control, server)

        // The operator restores the file; the same form goes through.
        try FileManager.default.createDirectory(at: server.databaseDirectory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: backup.path, toPath: path)
        let accepted = try await server.request("POST", "/signup", body: body)
        XCTAssertEqual(accepted.status, 303)
        let names = try SQLiteAccountStore(path: path).allAccounts().map(\.username)
        XCTAssertTrue(names.contains("beforefault") && names.contains("duringfault"), "\(names)")
    }

    // MARK: Cross-site posts

    func testPostsFromAnotherOriginAreRefusedWith403() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let control = try await controlSession(server)
        let form = try await server.client.openForm()
        let edit = "token=\(form.token)&field=email&value=a&seq=1"
        let evil = try await server.request("POST", "/fields", body: edit, headers: ["Origin": "https://evil.example"])
        XCTAssertEqual(evil.status, 403)
        XCTAssertTrue(evil.body.contains("cross_site_request"))
        let nullOrigin = try await server.request("POST", "/sessions", body: "", headers: ["Origin": "null"])
        XCTAssertEqual(nullOrigin.status, 403)
        let sandboxed = try await server.request("POST", "/sessions", body: "",
                                                 headers: ["Origin": "null", "Sec-Fetch-Site": "cross-site"])
        XCTAssertEqual(sandboxed.status, 403, "a sandboxed frame or a cross-site redirect")
        // A page of this site with Referrer-Policy: no-referrer (/verify) posts Origin: null;
        // the browser's Sec-Fetch-Site says it is this site's own page.
        let ownNoReferrer = try await server.request("POST", "/sessions", body: "",
                                                     headers: ["Origin": "null", "Sec-Fetch-Site": "same-origin"])
        XCTAssertNotEqual(ownNoReferrer.status, 403)
        let fetchMetadata = try await server.request("POST", "/fields", body: edit, headers: ["Sec-Fetch-Site": "cross-site"])
        XCTAssertEqual(fetchMetadata.status, 403)
        let signIn = try await server.request("POST", "/signin", body: "username=alice&password=x",
                                              headers: ["Origin": "http://127.0.0.1:1"])
        XCTAssertEqual(signIn.status, 403)
        XCTAssertEqual(signIn.headers["content-type"], "text/html; charset=utf-8")
        XCTAssertTrue(signIn.body.contains("another website"))

        let sameOrigin = try await server.request("POST", "/fields", body: edit,
                                                  headers: ["Origin": server.baseURL.absoluteString, "Sec-Fetch-Site": "same-origin"])
        XCTAssertEqual(sameOrigin.status, 202)
        try await assertUndisturbed(control, server)
    }

    // MARK: Behind a proxy

    func testForwardedAddressesCountOnlyFromATrustedProxy() async throws {
        let server = try TestServer {
            $0.trustedProxies = [IPAddressRange("127.0.0.1")!]
            $0.limits.pagesPerAddress = .per(minute: 1, burst: 2)
        }
        defer { server.stop() }
        let port = server.app.port
        func page(from peer: String, forwardedFor: String) throws -> Int {
            try RawExchange.send(port: port, from: peer, "GET", "/", headers: ["X-Forwarded-For": forwardedFor]).status
        }
        // Through the proxy, each real client has its own allowance.
        XCTAssertEqual(try [page(from: "127.0.0.1", forwardedFor: "203.0.113.1"),
                            page(from: "127.0.0.1", forwardedFor: "203.0.113.1"),
                            page(from: "127.0.0.1", forwardedFor: "203.0.113.1")], [200, 200, 429])
        XCTAssertEqual(try page(from: "127.0.0.1", forwardedFor: "203.0.113.2"), 200)
        // A client that forges the header gains nothing: it is not the proxy.
        XCTAssertEqual(try [page(from: Self.attacker, forwardedFor: "198.51.100.1"),
                            page(from: Self.attacker, forwardedFor: "198.51.100.2"),
                            page(from: Self.attacker, forwardedFor: "198.51.100.3")], [200, 200, 429])
    }

    // MARK: HTTP edge cases at the app

    func testEncodedPathsDoNotReachStaticFilesAndHeadOfEventsBuildsNoSession() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let port = server.app.port
        for path in ["/static/app.js%00", "/static/app%2ejs", "/static/%2e%2e/Package.swift"] {
            XCTAssertEqual(try RawExchange.send(port: port, "GET", path).status, 404, path)
        }
        XCTAssertEqual(try RawExchange.send(port: port, "GET", "/static/app.js").status, 200)
        let form = try await server.client.openForm()
        let head = try RawExchange.send(port: port, "HEAD", "/events?token=\(form.token)")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.body, "")
        XCTAssertEqual(server.app.sessionCount, 0)
    }

    func testKilledStreamsAreReleasedWithoutAThreadEach() throws {
        let server = try TestServer {
            $0.heartbeatIntervalSeconds = 1
            $0.limits = .none
        }
        defer { server.stop() }
        var clients: [RawHTTPConnection] = []
        for _ in 0..<200 {
            let token = try Self.token(in: RawExchange.send(port: server.app.port, "GET", "/").body)
            let client = try RawHTTPConnection(port: server.app.port)
            client.send("GET /events?token=\(token) HTTP/1.1\r\nHost: a\r\n\r\n")
            clients.append(client)
        }
        for client in clients { XCTAssertTrue(client.read { $0.contains("event: snapshot") }) }
        let threadsBefore = ProcessStatus.threadCount()
        var peak = threadsBefore
        for client in clients { client.closeNow() }
        // The predicate runs repeatedly while the streams are released: it records the peak.
        let released = Condition.wait(timeout: 5) {
            peak = max(peak, ProcessStatus.threadCount())
            return server.app.openStreamCount == 0
        }
        XCTAssertTrue(released, "\(server.app.openStreamCount) streams still open")
        XCTAssertLessThan(peak, threadsBefore + 16, "closing 200 sessions' streams did not spawn a thread each")
    }
}
