import Foundation
import HTTPTestSupport
import LiveSignupClient
import XCTest

/// The server as an operator runs it with their own policy file: the page's checklist, the
/// live states and the submit answer all follow the file; a bad file stops the start with
/// its line and reason; `policy check` validates a file without starting anything.
final class PolicyFileServerTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-policyfile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Username 6–20, password at least 12 without the uppercase rule, its own reserved names
    /// (one inline, one from a file beside it) and its own "taken" text.
    private func writeTenantPolicy() throws -> String {
        try "# our names\nconcierge\n".write(to: directory.appendingPathComponent("reserved.txt"), atomically: true, encoding: .utf8)
        let path = directory.appendingPathComponent("tenants.yaml").path
        try """
            name: tenants
            summary: Tenants' portal
            availability_debounce_ms: 20
            username:
              min_length: 6
              max_length: 20
              reserved: [landlord]
              reserved_file: reserved.txt
            password:
              min_length: 12
              require_uppercase: false
              min_strength: 2
            texts:
              username.available.taken: That name belongs to someone else
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func requirementIDs(in html: String) -> [String] {
        html.matches(of: #/data-requirement="([a-z.]+)"/#).map { String($0.1) }
    }

    private static func signUp(_ username: String, password: String, token: String, at base: URL) async throws -> (status: Int, body: String) {
        let body = FormURLEncoder.encode([("token", token), ("username", username), ("email", "\(username)@example.com"),
                                          ("password", password), ("confirm", password)])
        let answer = try await TestServer.request(to: base, "POST", "/signup", body: body)
        return (answer.status, answer.body)
    }

    func testThePageTheLiveStatesAndTheSubmitFollowTheFile() async throws {
        let server = try ServerProcess(arguments: ["--policy", try writeTenantPolicy(), "--signups-per-address", "off",
                                                   "--argon2-preset", "owasp-minimum"])
        defer { server.removeData() }
        try await server.start()
        let base = URL(string: "http://127.0.0.1:\(server.port)")!

        // The page: the file's checklist, no uppercase rule.
        let html = try await TestServer.request(to: base, "GET", "/").body
        XCTAssertTrue(html.contains(#"data-policy="tenants""#))
        XCTAssertTrue(html.contains("6 to 20 characters"), "username length from the file")
        XCTAssertTrue(html.contains("At least 12 characters"), "password length from the file")
        XCTAssertEqual(requirementIDs(in: html).filter { $0.hasPrefix("password.") },
                       ["password.length", "password.common", "password.strength"])

        // Live: the file's bounds and reserved names, with its text.
        let form = try await SignupClient(baseURL: base).openForm()
        let events = EventCollector(form.events())
        defer { events.stop() }
        await events.wait(forCount: 1)
        let five = try await form.edit("username", to: "abcde", touched: true)
        await events.wait { $0.contains { event in
            if case .message(field: "username", text: "Username must be at least 6 characters", let rev) = event { return rev == five.rev }
            return false
        } }
        _ = try await form.edit("username", to: "Concierge", touched: true)
        await events.wait { $0.contains { event in
            if case .message(field: "username", text: "That name belongs to someone else", _) = event { return true }
            return false
        } }
        let eleven = try await form.edit("password", to: "plum-violet", touched: true)
        await events.wait { $0.contains { event in
            if case .message(field: "password", text: "Password must be at least 12 characters", let rev) = event { return rev == eleven.rev }
            return false
        } }
        let twelve = try await form.edit("password", to: "plum-violet7", touched: true)
        await events.wait { $0.contains { event in
            if case .requirement(id: "password.length", state: .met, let rev) = event { return rev == twelve.rev }
            return false
        } }

        // Submit: refused for the file's reasons, accepted by its rules (no uppercase needed).
        let short = try await Self.signUp("gardener", password: "plum-violet", token: form.token, at: base)
        XCTAssertEqual(short.status, 422)
        XCTAssertTrue(short.body.contains("Password must be at least 12 characters"), short.body)
        let reserved = try await Self.signUp("LANDLORD", password: "quiet-plum-violet-7", token: form.token, at: base)
        XCTAssertEqual(reserved.status, 422)
        XCTAssertTrue(reserved.body.contains("That name belongs to someone else"), reserved.body)
        let accepted = try await Self.signUp("gardener", password: "quiet-plum-violet-7", token: form.token, at: base)
        XCTAssertEqual(accepted.status, 303, accepted.body)
        _ = await server.stop(with: SIGTERM)
    }

    func testABadFileStopsTheStartWithItsLineAndReason() throws {
        let path = directory.appendingPathComponent("bad.yaml").path
        try "name: bad\npassword:\n  min_length: 12\n  min_strenght: 3\n".write(toFile: path, atomically: true, encoding: .utf8)
        let (status, output, errors) = try ServerProcess.run(["--policy", path, "--port", "0"])
        XCTAssertNotEqual(status, 0, "nothing starts half-configured")
        XCTAssertFalse(output.contains("listening"), output)
        XCTAssertTrue(errors.contains("\(path):4: unknown setting 'password.min_strenght'"), errors)
    }

    func testPolicyCheckValidatesAFileWithoutStarting() throws {
        let good = try writeTenantPolicy()
        let checked = try ServerProcess.run(["policy", "check", good])
        XCTAssertEqual(checked.status, 0, checked.errors)
        XCTAssertTrue(checked.output.contains("\(good): OK, policy 'tenants'"), checked.output)
        XCTAssertTrue(checked.output.contains("password.length: At least 12 characters"), checked.output)
        XCTAssertTrue(checked.output.contains("2 reserved names"), checked.output)

        let multilingual = directory.appendingPathComponent("multilingual.yaml").path
        try "texts_by_language:\n  de:\n    confirm.empty: Bitte bestätigen\n    username.empty: Name fehlt\n"
            .write(toFile: multilingual, atomically: true, encoding: .utf8)
        let languages = try ServerProcess.run(["policy", "check", multilingual])
        XCTAssertEqual(languages.status, 0, languages.errors)
        XCTAssertTrue(languages.output.contains("own wording for: de (2 texts)"), languages.output)

        let bad = directory.appendingPathComponent("bad.yaml").path
        try "username:\n  min_length: 9\n  max_length: 5\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = try ServerProcess.run(["policy", "check", bad])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.errors.contains("\(bad):3: 'username.max_length' (5) is below 'username.min_length' (9)"), refused.errors)

        for preset in ["classic", "nist"] {
            XCTAssertEqual(try ServerProcess.run(["policy", "check", preset]).status, 0, preset)
        }
    }
}
