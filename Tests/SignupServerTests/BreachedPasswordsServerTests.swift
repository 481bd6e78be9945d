import Foundation
import HTTPTestSupport
import LiveSignupClient
import MicroHTTPD
import SignupDomain
import XCTest

/// `password.breached` as an operator turns it on: from a Pwned Passwords file or the range
/// API, on the page, live and on submit; an API that fails lets sign-ups through unless the
/// built-in list has the password.
final class BreachedPasswordsServerTests: XCTestCase {
    private let breached = "Sunshine-2024-Garden"
    private let clean = "Quiet-Otter-742-Lantern"
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-breach-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A small Pwned Passwords file: `breached` seen 3,861 times among made-up hashes.
    private func writePwnedFile() throws -> String {
        var lines = (0..<200).map { index in
            "\(BreachedPasswords.sha1(of: "filler-\(index)")):\(index + 1)"
        }
        lines.append("\(BreachedPasswords.sha1(of: breached)):3861")
        let path = directory.appendingPathComponent("pwned.txt").path
        try (lines.sorted().joined(separator: "\r\n") + "\r\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func watchPassword(on base: URL, _ password: String) async throws -> (state: RequirementState, message: String) {
        let form = try await SignupClient(baseURL: base).openForm()
        let events = EventCollector(form.events())
        defer { events.stop() }
        await events.wait(forCount: 1)
        let receipt = try await form.edit("password", to: password, touched: true)
        var state = RequirementState.pending
        var message = ""
        // The answer, and when it is "breached" also the message that explains it (sent
        // with it, possibly a moment later).
        let all = await events.wait { events in
            let answer = events.lazy.compactMap { event -> RequirementState? in
                if case .requirement(id: "password.breached", let answered, let rev) = event,
                   rev == receipt.rev, answered != .pending { return answered }
                return nil
            }.first
            let explained = events.contains { event in
                if case .message(field: "password", let text, _) = event { return text.contains("data breaches") }
                return false
            }
            return answer == .met || (answer == .unmet && explained)
        }
        for event in all {
            switch event {
            case .requirement(id: "password.breached", let answered, _): state = answered
            case .message(field: "password", let text, _): message = text
            default: break
            }
        }
        return (state, message)
    }

    private func signUp(_ password: String, at base: URL) async throws -> (status: Int, body: String) {
        let form = try await SignupClient(baseURL: base).openForm()
        let username = "user\(UInt32.random(in: 0...UInt32.max))"
        let body = FormURLEncoder.encode([("token", form.token), ("username", username), ("email", "\(username)@example.com"),
                                          ("password", password), ("confirm", password)])
        let answer = try await TestServer.request(to: base, "POST", "/signup", body: body)
        return (answer.status, answer.body)
    }

    private static let quickServer = ["--availability-debounce-ms", "20", "--signups-per-address", "off",
                                      "--argon2-preset", "owasp-minimum", "--hashes-per-address", "100"]

    func testAPwnedPasswordsFileOnDisk() async throws {
        let server = try ServerProcess(arguments: ["--breached-passwords", try writePwnedFile()] + Self.quickServer)
        defer { server.removeData() }
        try await server.start()
        let base = URL(string: "http://127.0.0.1:\(server.port)")!

        let html = try await TestServer.request(to: base, "GET", "/").body
        XCTAssertTrue(html.contains(#"data-requirement="password.breached""#))
        XCTAssertTrue(html.contains("Not found in a known data breach"))

        let live = try await watchPassword(on: base, breached)
        XCTAssertEqual(live.state, .unmet)
        XCTAssertTrue(live.message.contains("(3,861 times so far)"), live.message)
        let cleanLive = try await watchPassword(on: base, clean)
        XCTAssertEqual(cleanLive.state, .met)

        let refused = try await signUp(breached, at: base)
        XCTAssertEqual(refused.status, 422)
        XCTAssertTrue(refused.body.contains("3,861 times so far"), refused.body)
        let accepted = try await signUp(clean, at: base)
        XCTAssertEqual(accepted.status, 303, accepted.body)
        _ = await server.stop(with: SIGTERM)
    }

    func testTheRangeAPIAndItsFailOpenFallback() async throws {
        let stub = RangeStub(breached: [breached: 12])
        let api = HTTPServer(configuration: HTTPServerConfiguration(port: 0), responder: stub)
        try api.start()
        defer { _ = api.stop(grace: 0) }
        let server = try ServerProcess(arguments: ["--breached-passwords-api", "http://127.0.0.1:\(api.port)",
                                                   "--breached-passwords-timeout-ms", "1000"] + Self.quickServer)
        defer { server.removeData() }
        try await server.start()
        let base = URL(string: "http://127.0.0.1:\(server.port)")!

        let live = try await watchPassword(on: base, breached)
        XCTAssertEqual(live.state, .unmet)
        XCTAssertTrue(live.message.contains("(12 times so far)"), live.message)
        let refused = try await signUp(breached, at: base)
        XCTAssertEqual(refused.status, 422)
        XCTAssertTrue(stub.paths.allSatisfy { $0.wholeMatch(of: #/\/range\/[0-9A-F]{5}/#) != nil }, "\(stub.paths)")

        // The API goes down: sign-ups go on; the built-in list still refuses the commonest.
        stub.failing = true
        let duringOutage = try await watchPassword(on: base, clean)
        XCTAssertEqual(duringOutage.state, .met, "fail-open")
        let accepted = try await signUp(clean, at: base)
        XCTAssertEqual(accepted.status, 303, accepted.body)

        // Operators see the outage: the fallback's answers are counted apart.
        let metrics = try RawExchange.send(port: server.port, "GET", "/metrics").body
        func count(_ result: String) -> Int {
            metrics.firstMatch(of: try! Regex(#"livesignup_breach_lookups_total\{result="\#(result)"\} (\d+)"#))
                .flatMap { Int($0.output[1].substring ?? "") } ?? 0
        }
        XCTAssertGreaterThanOrEqual(count("found"), 2, metrics)
        XCTAssertGreaterThanOrEqual(count("source_failed"), 2, metrics)
        _ = await server.stop(with: SIGTERM)
    }

    func testAFileThatIsNotPwnedPasswordsStopsTheStart() throws {
        let path = directory.appendingPathComponent("words.txt").path
        try "password\n123456\n".write(toFile: path, atomically: true, encoding: .utf8)
        let (status, _, errors) = try ServerProcess.run(["--breached-passwords", path, "--port", "0"])
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(errors.contains("does not start with a 'SHA1:COUNT' line"), errors)
        let both = try ServerProcess.run(["--breached-passwords", path, "--breached-passwords-api", "http://127.0.0.1:1", "--port", "0"])
        XCTAssertTrue(both.errors.contains("not both"), both.errors)
    }
}

/// The range API, answering from `breached` (password → count) with padding, or 503.
private final class RangeStub: HTTPResponder, @unchecked Sendable {
    private let lock = NSLock()
    private var asked: [String] = []
    private var down = false
    private let hashes: [String: Int]

    init(breached: [String: Int]) {
        hashes = Dictionary(uniqueKeysWithValues: breached.map { (BreachedPasswords.sha1(of: $0.key), $0.value) })
    }

    var paths: [String] { lock.withLock { asked } }
    var failing: Bool {
        get { lock.withLock { down } }
        set { lock.withLock { down = newValue } }
    }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        lock.withLock { asked.append(request.path) }
        if failing { return .text("down", status: .serviceUnavailable) }
        let prefix = String(request.path.dropFirst("/range/".count))
        let lines = hashes.filter { $0.key.hasPrefix(prefix) }.map { "\($0.key.dropFirst(5)):\($0.value)" }
            + ["\(String(repeating: "0", count: 35)):0"]
        return .text(lines.joined(separator: "\r\n"))
    }
}
