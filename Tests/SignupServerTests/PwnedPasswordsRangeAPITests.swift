import Foundation
import HTTPTestSupport
import MicroHTTPD
import SignupDomain
import SignupLookups
import XCTest

/// The k-anonymity range client against a local stub of the API (MicroHTTPD): only the
/// prefix is sent, answers are cached per prefix, padding means "not seen", and a slow or
/// failing API is an error within the timeout (the caller falls back).
final class PwnedPasswordsRangeAPITests: XCTestCase {
    /// Answers `/range/XXXXX` from `breached` (password → count), with padding lines; records
    /// every path asked for. `stall` leaves requests unanswered; `status` answers with it.
    private final class Stub: HTTPResponder, @unchecked Sendable {
        let lock = NSLock()
        var paths: [String] = []
        var status: HTTPStatus = .ok
        var stall = false
        /// Answered instead of the range when set.
        var body: String?
        let hashes: [String: Int]

        init(breached: [String: Int]) {
            hashes = Dictionary(uniqueKeysWithValues: breached.map { (BreachedPasswords.sha1(of: $0.key), $0.value) })
        }

        func respond(to request: HTTPRequest) -> HTTPResponse {
            let (status, stall, body) = lock.withLock { () -> (HTTPStatus, Bool, String?) in
                paths.append(request.path)
                return (self.status, self.stall, self.body)
            }
            if stall { return .later { _ in } }
            guard status == .ok else { return .text("unavailable", status: status) }
            if let body { return .text(body) }
            let prefix = String(request.path.dropFirst("/range/".count))
            var lines = hashes.filter { $0.key.hasPrefix(prefix) }.map { "\($0.key.dropFirst(5)):\($0.value)" }
            lines += (0..<3).map { _ in "\(String(repeating: "0", count: 35)):0" }  // padding
            return .text(lines.joined(separator: "\r\n"))
        }
    }

    private var server: HTTPServer!
    private var stub: Stub!

    override func setUpWithError() throws {
        stub = Stub(breached: ["password": 10_434_004, "Tr0ub4dor&3": 12])
        server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), responder: stub)
        try server.start()
    }

    override func tearDown() {
        _ = server.stop(grace: 0)
    }

    private var baseURL: URL { URL(string: "http://127.0.0.1:\(server.port)")! }

    func testCountsComeBackAndOnlyThePrefixLeaves() throws {
        let api = PwnedPasswordsRangeAPI(baseURL: baseURL)
        XCTAssertEqual(try api.timesSeen(sha1: BreachedPasswords.sha1(of: "password")), 10_434_004)
        XCTAssertEqual(try api.timesSeen(sha1: BreachedPasswords.sha1(of: "Tr0ub4dor&3")), 12)
        XCTAssertEqual(try api.timesSeen(sha1: BreachedPasswords.sha1(of: "correct horse battery staple lantern")), 0)
        let paths = stub.lock.withLock { stub.paths }
        XCTAssertEqual(paths.count, 3)
        for path in paths {
            XCTAssertNotNil(path.wholeMatch(of: #/\/range\/[0-9A-F]{5}/#), "only five hex digits leave the server: \(path)")
        }
    }

    func testAnswersAreCachedPerPrefixUntilTheyAge() throws {
        let clock = TestClock()
        let api = PwnedPasswordsRangeAPI(baseURL: baseURL, cacheLifetime: 60, now: { clock.now })
        let hash = BreachedPasswords.sha1(of: "password")
        for _ in 0..<5 { XCTAssertEqual(try api.timesSeen(sha1: hash), 10_434_004) }
        XCTAssertEqual(api.requestsSent, 1, "one request per prefix while it is fresh")
        clock.advance(by: 61)
        XCTAssertEqual(try api.timesSeen(sha1: hash), 10_434_004)
        XCTAssertEqual(api.requestsSent, 2, "asked again once the answer aged")
    }

    func testAFailingOrSilentAPIIsAnErrorWithinTheTimeout() throws {
        let api = PwnedPasswordsRangeAPI(baseURL: baseURL, timeout: 2)
        stub.lock.withLock { stub.status = .serviceUnavailable }
        XCTAssertThrowsError(try api.timesSeen(sha1: BreachedPasswords.sha1(of: "password"))) { error in
            XCTAssertTrue("\(error)".contains("answered 503"), "\(error)")
        }
        stub.lock.withLock { stub.status = .ok; stub.stall = true }
        let started = Date()
        XCTAssertThrowsError(try api.timesSeen(sha1: BreachedPasswords.sha1(of: "Tr0ub4dor&3"))) { error in
            XCTAssertTrue("\(error)".contains("did not answer"), "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "bounded by the timeout, not the server")
    }
}

/// What a broken or hostile source costs: refused answers are errors with a reason (the
/// checker then fails open), and a source that keeps failing is left alone for a while.
final class RangeAPIBoundsTests: XCTestCase {
    private final class Stub: HTTPResponder, @unchecked Sendable {
        let lock = NSLock()
        var requests = 0
        var answer: HTTPResponse = .text("unavailable", status: .serviceUnavailable)
        var stall = false

        func respond(to request: HTTPRequest) -> HTTPResponse {
            lock.withLock {
                requests += 1
                return stall ? .later { _ in } : answer
            }
        }
    }

    private var server: HTTPServer!
    private let stub = Stub()

    override func setUpWithError() throws {
        server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), responder: stub)
        try server.start()
    }

    override func tearDown() {
        _ = server.stop(grace: 0)
    }

    private var baseURL: URL { URL(string: "http://127.0.0.1:\(server.port)")! }
    private let hash = BreachedPasswords.sha1(of: "password")
    private func range(lines: Int) -> String {
        (0..<lines).map { String(format: "%035X:%d", $0, $0 % 7) }.joined(separator: "\r\n")
    }

    private func reason(_ api: PwnedPasswordsRangeAPI) -> String? {
        do {
            _ = try api.timesSeen(sha1: hash)
            return nil
        } catch {
            return (error as? BreachedPasswordError)?.reason
        }
    }

    func testAnAnswerThatIsNotSuffixCountLinesIsRefusedNotReadAsNeverSeen() {
        let api = PwnedPasswordsRangeAPI(baseURL: baseURL)
        for garbage in ["<html><body>502 Bad Gateway</body></html>", "", range(lines: 3) + "\r\nnot a line"] {
            stub.lock.withLock { stub.answer = .text(garbage) }
            XCTAssertEqual(reason(api), "garbage", "answer: \(garbage.suffix(40))")
        }
        stub.lock.withLock { stub.answer = .text(range(lines: 3)) }
        XCTAssertNil(reason(api), "well-formed lines are an answer")
    }

    func testAnAnswerOverTheCapIsRefusedWhetherDeclaredOrStreamed() {
        let api = PwnedPasswordsRangeAPI(baseURL: baseURL, maxAnswerBytes: 4_000)
        stub.lock.withLock { stub.answer = .text(range(lines: 200)) }  // about 7,800 bytes
        XCTAssertEqual(reason(api), "too_large")
        stub.lock.withLock { stub.answer = .text(range(lines: 60)) }
        XCTAssertNil(reason(api), "under the cap it is read")
    }

    func testAfterFiveFailuresInARowTheSourceIsLeftAloneThenTriedAgain() {
        let clock = TestClock()
        let api = PwnedPasswordsRangeAPI(baseURL: baseURL, cacheLifetime: 0, now: { clock.now })
        for _ in 0..<5 { XCTAssertEqual(reason(api), "status") }
        XCTAssertEqual(stub.lock.withLock { stub.requests }, 5)
        XCTAssertEqual(reason(api), "paused", "the sixth is refused without asking")
        XCTAssertEqual(stub.lock.withLock { stub.requests }, 5)
        clock.advance(by: 31)
        stub.lock.withLock { stub.answer = .text(range(lines: 3)) }
        XCTAssertNil(reason(api), "after the pause one look-up tries again, and it answers")
        XCTAssertNil(reason(api))
        XCTAssertEqual(stub.lock.withLock { stub.requests }, 7)
    }

    func testLookUpsOverTheConcurrencyBoundAreRefusedAtOnce() {
        let api = PwnedPasswordsRangeAPI(baseURL: baseURL, timeout: 3, maxConcurrentLookups: 1)
        stub.lock.withLock { stub.stall = true }
        let first = Thread { _ = try? api.timesSeen(sha1: BreachedPasswords.sha1(of: "first")) }
        first.start()
        XCTAssertTrue(Condition.wait(timeout: 5) { api.lookupsInFlight == 1 })
        let started = Date()
        XCTAssertEqual(reason(api), "busy")
        XCTAssertLessThan(Date().timeIntervalSince(started), 1, "refused at once, not queued behind the stalled one")
    }
}
