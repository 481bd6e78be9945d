import Foundation
import GRDB
import HTTPTestSupport
import Logging
import MicroHTTPD
import SignupDomain
import SignupSQLite
@testable import SignupServer
@testable import WebKernel
import XCTest
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
import Locking
#endif

/// The routes answered in process, with no socket (`SignupApplication.respond(to:)`), and
/// time driven by the test's own clock: the route table's promises (Allow, HEAD, refusal
/// formats, fixed metrics labels) and limits that refill only when the clock moves.
final class InProcessRouteTests: XCTestCase {
    private var directory: URL!
    private var store: SQLiteAccountStore!
    private let clock = TestClock()

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-routes-\(UUID().uuidString)")
        store = try SQLiteAccountStore(path: directory.appendingPathComponent("test.sqlite").path)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    private func makeApp(_ configure: (inout SignupApplication.Configuration) -> Void = { _ in }) throws -> SignupApplication {
        var configuration = SignupApplication.Configuration.forTests()
        configuration.clock = clock
        configure(&configuration)
        var quiet = Logger(label: "livesignup-route-test")
        quiet.logLevel = .critical
        return try SignupApplication(configuration: configuration, store: store, logger: quiet)
    }

    private func request(_ method: String, _ path: String, body: String = "", headers: [(String, String)] = [],
                         from address: String = "127.0.0.1") -> HTTPRequest {
        var all = HTTPHeaders(headers)
        if !body.isEmpty { all.add("Content-Type", "application/x-www-form-urlencoded") }
        let parts = path.split(separator: "?", maxSplits: 1)
        let query = parts.count > 1 ? parts[1].split(separator: "&").map { pair -> (name: String, value: String) in
            let kv = pair.split(separator: "=", maxSplits: 1)
            return (String(kv[0]), kv.count > 1 ? String(kv[1]) : "")
        } : []
        return HTTPRequest(method: method, path: String(parts[0]), query: query, headers: all,
                           body: Array(body.utf8), remoteAddress: address)
    }

    private func text(_ response: HTTPResponse) -> String {
        guard case .bytes(let bytes) = response.body else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }

    func testEveryRouteAnswersWrongMethodsWithItsOwnAllowAndGetBringsHead() async throws {
        let app = try makeApp()
        for path in Set(app.routeTable.routes.map(\.path)).sorted() {
            let rows = try XCTUnwrap(app.routeTable.resolve(path), path)
            let requested = rows.any.isPrefix ? path + "app.js" : path
            let wrong: HTTPMethod = [HTTPMethod.put, .delete, .post, .get].first { rows.route(for: $0) == nil }!
            let refused = await app.respond(to: request(wrong.rawValue, requested))
            XCTAssertEqual(refused.status, .methodNotAllowed, "\(wrong) \(requested)")
            XCTAssertEqual(refused.headers["Allow"], rows.allow, path)
            let unknown = await app.respond(to: request("BREW", requested))
            XCTAssertEqual(unknown.status, .methodNotAllowed, "a method no row declares, \(requested)")
            XCTAssertEqual(unknown.headers["Allow"], rows.allow, path)
            if let get = rows.route(for: .get) {
                XCTAssertTrue(rows.allow.contains("GET, HEAD"), "\(path): GET brings HEAD")
                XCTAssertTrue(rows.route(for: .head) === get, "\(path): HEAD is answered by the GET row")
            } else {
                XCTAssertFalse(rows.allow.contains("HEAD"), path)
                XCTAssertNil(rows.route(for: .head), path)
            }
        }
        // One path, two methods, two rows: each its own handler and limits, one Allow.
        let signIn = try XCTUnwrap(app.routeTable.resolve("/signin"))
        XCTAssertEqual(signIn.allow, "GET, HEAD, POST")
        XCTAssertEqual(signIn.route(for: .get)?.limits, [])
        XCTAssertEqual(signIn.route(for: .post)?.reads, .form)
        let head = await app.respond(to: request("HEAD", "/signin"))
        XCTAssertEqual(head.status, .ok, "HEAD /signin is answered as GET")
        XCTAssertEqual(app.routeTable.name(of: "/static/app.1234.js"), "/static")
        XCTAssertEqual(app.routeTable.name(of: "/wp-admin"), "other", "clients cannot make labels up")
        let unknown = await app.respond(to: request("GET", "/wp-admin"))
        XCTAssertEqual(unknown.status, .notFound)
    }

    /// The access line shows 6 letters or digits of a form token (after its last dot), from
    /// the query or the body as sent: a made-up token cannot put anything else into a line.
    func testTheAccessLineShowsSixLettersOrDigitsOfAToken() {
        func shown(query: String? = nil, body: String = "") -> String? {
            Router.loggedToken(of: HTTPRequest(
                method: "POST", path: "/fields", query: query.map { [("token", $0)] } ?? [], body: Array(body.utf8)))
        }
        XCTAssertEqual(shown(body: "field=f&token=inst.abcDEF123&seq=1"), "abcDEF")
        XCTAssertEqual(shown(query: "inst-1.9f8e7d6c"), "9f8e7d")
        XCTAssertEqual(shown(body: "xtoken=nope&token=a.b.%0Ax=y1\u{7}"), "0Axy", "after the last dot, escapes and signs dropped")
        XCTAssertEqual(shown(body: "token=é.ü\nz=1"), "z1", "non-ASCII, line breaks and signs dropped")
        XCTAssertNil(shown(body: "field=f&seq=1"))
    }

    func testTheAccessLineShowsADurationInMillisecondsWithTwoDecimals() {
        let cases: [(Double, String)] = [(0, "0.00"), (0.000_01, "0.01"), (0.000_099, "0.10"), (0.0034, "3.40"),
                                         (0.012_346, "12.35"), (1.5, "1500.00"), (-0.001, "0.00")]
        for (seconds, shown) in cases {
            XCTAssertEqual(Router.milliseconds(seconds), shown, "\(seconds) s")
        }
    }

    func testACrossSitePostIsRefusedInTheFormatItsRowSays() async throws {
        let app = try makeApp()
        let foreign = [("Origin", "https://evil.example"), ("Host", "127.0.0.1")]
        let page = await app.respond(to: request("POST", "/signup", body: "token=x", headers: foreign))
        XCTAssertEqual(page.status, .forbidden)
        XCTAssertEqual(page.headers["Content-Type"], "text/html; charset=utf-8", "a person is looking at /signup")
        let json = await app.respond(to: request("POST", "/fields", body: "token=x", headers: foreign))
        XCTAssertEqual(json.status, .forbidden)
        XCTAssertEqual(json.headers["Content-Type"], "application/json")
        XCTAssertTrue(text(json).contains("cross_site_request"), text(json))
    }

    func testThePageLimitRefillsOnlyWhenTheInjectedClockMoves() async throws {
        let app = try makeApp { $0.limits.pagesPerAddress = .per(second: 1, burst: 2) }
        let visitor = "192.0.2.7", neighbour = "192.0.2.8"
        for _ in 0..<2 {
            let page = await app.respond(to: request("GET", "/", from: visitor))
            XCTAssertEqual(page.status, .ok)
        }
        let third = await app.respond(to: request("GET", "/", from: visitor))
        XCTAssertEqual(third.status, .tooManyRequests)
        XCTAssertEqual(third.headers["Retry-After"], "1")
        // The limit is the visitor's alone: a neighbour on another address is served.
        let other = await app.respond(to: request("GET", "/", from: neighbour))
        XCTAssertEqual(other.status, .ok)
        // No real time passes in this test; only the clock the app was given.
        let stillLimited = await app.respond(to: request("GET", "/", from: visitor))
        XCTAssertEqual(stillLimited.status, .tooManyRequests)
        clock.advance(by: 1)
        let refilled = await app.respond(to: request("GET", "/", from: visitor))
        XCTAssertEqual(refilled.status, .ok)
    }

    func testASignupAnsweredInProcessStoresTheAccountAndRedirects() async throws {
        let app = try makeApp()
        let tokenAnswer = await app.respond(to: request("POST", "/sessions"))
        XCTAssertEqual(tokenAnswer.status, .created)
        let token = try XCTUnwrap(text(tokenAnswer).firstMatch(of: #/"token":"([^"]+)"/#).map { String($0.1) })
        let body = "token=\(token)&username=inproc&email=inproc%40example.com&password=Correct-Horse-9&confirm=Correct-Horse-9"
        let answer = await app.respond(to: request("POST", "/signup", body: body))
        XCTAssertEqual(answer.status, .seeOther, text(answer))
        XCTAssertEqual(answer.headers["Location"], "/welcome")
        XCTAssertNotNil(try store.account(named: "inproc"))
    }

    /// A live username look-up over its form's budget waits for its turn on the app's clock
    /// (`Configuration.clock`), not on the computer's clock: the test moves time and the answer
    /// comes exactly when the budget allows.
    func testALiveLookUpOverItsBudgetWaitsForItsTurnOnTheInjectedClock() {
        var limits = SignupLimits.none
        limits.lookupsPerSession = Rate.per(minute: 4, burst: 1)  // one each 15 s
        let limiters = ClientLimiters(limits, now: { [clock] in clock.now })
        let checker = ThrottledAvailabilityChecker(
            base: StoreAvailabilityChecker(store: store), limiters: limiters, sessionKey: "form", addressKey: "127.0.0.1",
            checks: ServerMetrics().availabilityChecks, clock: clock)
        let answers = Locked<[RequirementState]>([])
        let first = checker.availability(of: "ada").sink { state in answers.withLock { $0.append(state) } }
        clock.advance(by: 0)
        XCTAssertEqual(answers.withLock { $0 }, [.met], "within its budget: answered at once")
        let second = checker.availability(of: "grace").sink { state in answers.withLock { $0.append(state) } }
        clock.advance(by: 14)
        XCTAssertEqual(answers.withLock { $0 }, [.met], "over its budget: still waiting after 14 s")
        XCTAssertEqual(clock.waiting, 1)
        clock.advance(by: 1)
        XCTAssertEqual(answers.withLock { $0 }, [.met, .met], "answered when the budget allows, 15 s on")
        _ = (first, second)
    }

    /// The route table says which limits each route draws from; every limit a 429 can name is
    /// some route's, so the table is the map from a metric's label to the routes it guards.
    func testEveryLimitNameBelongsToARoute() throws {
        let app = try makeApp()
        XCTAssertEqual(Set(app.routeTable.routes.flatMap(\.limits)), Set(RateLimitName.allCases))
    }

    /// Idle sessions are swept on the app's clock: a test moves it past the idle lifetime and
    /// the sweep it scheduled at start runs, with no real time passing.
    func testIdleSessionsAreSweptWhenTheInjectedClockPassesTheirLifetime() async throws {
        let app = try makeApp {
            $0.sessionIdleLifetime = 60
        }
        try app.start()
        defer { app.stop(grace: 0) }
        let tokenAnswer = await app.respond(to: request("POST", "/sessions"))
        let token = try XCTUnwrap(text(tokenAnswer).firstMatch(of: #/"token":"([^"]+)"/#).map { String($0.1) })
        let edit = await app.respond(to: request("POST", "/fields?token=\(token)", body: "token=\(token)&field=username&value=ada&seq=1"))
        XCTAssertEqual(edit.status, .accepted)
        XCTAssertEqual(app.sessionCount, 1)
        clock.advance(by: 45)
        XCTAssertEqual(app.sessionCount, 1, "not idle for its lifetime yet")
        clock.advance(by: 30)
        XCTAssertEqual(app.sessionCount, 0, "swept once the clock passed the idle lifetime")
    }

    /// Each flow sweeps what it keeps for a while (`Flow.sweeps`), each sweep on its own: a
    /// table that cannot be swept (here the spent proofs', renamed away) is logged and the
    /// sweeps after it still run, so an expired recovery still goes.
    func testASweepThatFailsLeavesTheOthersToRun() async throws {
        let app = try makeApp { $0.sessionIdleLifetime = 60 }
        try app.start()
        defer { app.stop(grace: 0) }
        try store.startRecovery(AccountRecovery(
            token: VerificationSecrets.makeLinkToken(), accountID: nil, codeHash: VerificationSecrets.unmatchableHash(),
            linkHash: VerificationSecrets.unmatchableHash(), language: "en", expiresAt: clock.now.addingTimeInterval(5),
            createdAt: clock.now), mail: nil)
        let database = try DatabaseQueue(path: directory.appendingPathComponent("test.sqlite").path)
        func recoveries() throws -> Int {
            try database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM account_recoveries") ?? -1 }
        }
        XCTAssertEqual(try recoveries(), 1)
        try await database.write { try $0.execute(sql: "ALTER TABLE spent_proofs RENAME TO spent_proofs_away") }
        clock.advance(by: 20)
        XCTAssertEqual(try recoveries(), 0, "the recoveries' sweep ran after the proofs' failed")
        try await database.write { try $0.execute(sql: "ALTER TABLE spent_proofs_away RENAME TO spent_proofs") }
    }

    /// The templates checked at start are every flow's pages' (`Flow.pages`): a page's
    /// missing template stops the start, naming it, rather than a visitor's request later.
    func testAFlowsPageWithoutItsTemplateStopsTheStart() throws {
        let templates = directory.appendingPathComponent("templates")
        try FileManager.default.copyItem(at: TestServer.repositoryRoot.appendingPathComponent("Templates"), to: templates)
        XCTAssertTrue(Router.pageTemplates.contains(DeletionPage.template), "the account flow's deletion page is listed")
        try FileManager.default.removeItem(at: templates.appendingPathComponent(DeletionPage.template + ".mustache"))
        XCTAssertThrowsError(try makeApp { $0.templatesDirectory = templates }) { error in
            XCTAssertTrue("\(error)".contains("Template 'account-delete.mustache' not found"), "\(error)")
        }
    }

    /// One form edited from several request threads at once, while its debounced username
    /// look-ups run on the session's queue (a 1 ms debounce, so they interleave with the
    /// edits): the session's lock lets one of them in at a time, so every applied edit gets a
    /// rev of its own and none is skipped.
    func testEditsOfOneFormFromManyThreadsAtOnceEachGetARevOfTheirOwn() async throws {
        let app = try makeApp {
            $0.limits = .none
            $0.availabilityDebounce = .milliseconds(1)
        }
        try app.start()
        defer { app.stop(grace: 0) }
        let tokenAnswer = await app.respond(to: request("POST", "/sessions"))
        let token = try XCTUnwrap(text(tokenAnswer).firstMatch(of: #/"token":"([^"]+)"/#).map { String($0.1) })
        let fields = ["username", "email", "password", "confirm"]
        let editsPerField = 150
        let edits = fields.map { field in
            (1...editsPerField).map { seq in
                let value = field == "email" ? "p\(seq)%40example.com" : "name\(seq)"
                return request("POST", "/fields", body: "token=\(token)&field=\(field)&value=\(value)&seq=\(seq)")
            }
        }
        // A task per field: the pool runs them on as many threads as there are cores, and
        // an answer that needs no deferred work is made on the task's own thread.
        let answers = await withTaskGroup(of: [(status: Int, rev: Int?)].self) { group in
            for requests in edits {
                group.addTask {
                    var answers: [(status: Int, rev: Int?)] = []
                    for edit in requests {
                        let answer = await app.respond(to: edit)
                        answers.append((answer.status.code, answer.headers["X-Rev"].flatMap { Int($0) }))
                    }
                    return answers
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        XCTAssertEqual(Set(answers.map(\.status)), [202])
        let revs = answers.compactMap(\.rev)
        XCTAssertEqual(revs.count, fields.count * editsPerField)
        XCTAssertEqual(Set(revs).count, revs.count, "two edits were given one rev")
        XCTAssertEqual(Set(revs), Set(1...(fields.count * editsPerField)), "a rev was skipped")
    }
}
