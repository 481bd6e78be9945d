import Clocks
import Foundation
import HTTPTestSupport
import LiveSignupClient
import Locking
import OpenIDConnect
import SignupDomain
@testable import Identity
@testable import SignupServer
import XCTest

/// Issue 56: signing out through an application (RP-initiated logout), and the applications
/// told when a session they hold ends (back-channel logout), their logout tokens verified by
/// joserfc in a receiver we did not write the checks of. A link alone signs nobody out; an
/// unregistered place to go back to is never redirected to; another person's grant is left
/// alone.
final class OpenIDLogoutTests: XCTestCase {
    private var server: TestServer!
    private var clock: TestClock!
    private var receiver: Process!
    private let received = Locked<[String]>([])
    private let secret = "logout-secret-0123456789-abcdefghijklmn"
    private let redirect = "http://127.0.0.1:9/callback"
    private let goodbye = "http://127.0.0.1:9/goodbye"
    private let verifier = "a-verifier-of-forty-three-or-more-characters-0123"

    override func setUp() async throws {
        try Prerequisite.python(module: "joserfc")
        // In the past: the test moves this clock on faster than real time passes, and a token
        // issued in the future would be refused.
        clock = TestClock(start: Date().addingTimeInterval(-300))
        // The receiver first: its port is the client's back-channel URI. It needs the key set's
        // address, which is the server's, known only once the server runs: read from a file.
        let jwksFile = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString)")
        let port = try await startReceiver(jwksFile: jwksFile)
        server = try TestServer { [clock, secret, redirect, goodbye] configuration in
            configuration.clock = clock!
            var policy = Policy.classic
            var wiki = ClientDeclaration(id: "wiki", name: "The Wiki", redirectURIs: [redirect])
            wiki.firstParty = true
            wiki.secretVariable = "WIKI_SECRET"
            wiki.postLogoutRedirectURIs = [goodbye]
            wiki.backchannelLogoutURI = "http://127.0.0.1:\(port)/backchannel"
            policy.clients = [wiki]
            configuration.policy = FormPolicy(policy)
            configuration.clientSecrets = ["wiki": secret]
        }
        try (server.baseURL.appendingPathComponent(".well-known/jwks.json").absoluteString).write(to: jwksFile, atomically: true, encoding: .utf8)
    }

    override func tearDown() {
        server?.stop()
        // SIGKILL: a child started by `ProcessLauncher` may inherit a mask that holds SIGTERM.
        if let receiver, receiver.isRunning { kill(receiver.processIdentifier, SIGKILL); receiver.waitUntilExit() }
    }

    /// Tests/Interop/backchannel_receiver.py, its key set's address read from `jwksFile` when
    /// the first token comes; each verified token's claims land in `received`.
    private func startReceiver(jwksFile: URL) async throws -> UInt16 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", TestServer.repositoryRoot.appendingPathComponent("Tests/Interop/backchannel_receiver.py").path,
                             jwksFile.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try ProcessLauncher.shared.run(process)
        receiver = process
        let lines = Locked<[String]>([]), buffer = Locked(Data())
        output.fileHandleForReading.readabilityHandler = { [received] handle in
            let data = handle.availableData
            guard !data.isEmpty else { handle.readabilityHandler = nil; return }
            buffer.withLock { $0.append(data) }
            while let line = buffer.withLock({ bytes -> String? in
                guard let newline = bytes.firstIndex(of: 0x0A) else { return nil }
                let line = String(decoding: bytes[..<newline], as: UTF8.self)
                bytes.removeSubrange(...newline)
                return line
            }) {
                if lines.withLock({ $0.isEmpty }) { lines.withLock { $0.append(line) } } else { received.withLock { $0.append(line) } }
            }
        }
        let said = await Condition.wait(timeout: 20) { !lines.withLock { $0.isEmpty } }
        XCTAssertTrue(said, "the receiver said its port")
        return try XCTUnwrap(lines.withLock { $0.first }.flatMap { UInt16($0) })
    }

    // MARK: Helpers


    /// The wiki's tokens for the browser signed in with `cookie`.
    private func tokens(cookie: String) async throws -> [String: Any] {
        let query = FormURLEncoder.encode([
            ("response_type", "code"), ("client_id", "wiki"), ("redirect_uri", redirect), ("scope", "openid"),
            ("code_challenge", PKCE.challenge(for: verifier)), ("code_challenge_method", "S256")])
        let authorized = try await server.request("GET", "/oauth2/authorize?" + query, headers: ["Cookie": cookie])
        let code = try XCTUnwrap(URLComponents(string: authorized.headers["location"] ?? "")?.queryItems?.first { $0.name == "code" }?.value)
        let answer = try await server.request("POST", "/oauth2/token", body: FormURLEncoder.encode([
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect), ("code_verifier", verifier),
            ("client_id", "wiki"), ("client_secret", secret)]))
        XCTAssertEqual(answer.status, 200, answer.body)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
    }

    private func userinfo(_ tokens: [String: Any]) async throws -> Int {
        try await server.request("GET", "/oauth2/userinfo", headers: ["Authorization": "Bearer \(tokens["access_token"] as? String ?? "")"]).status
    }

    private func sid(of idToken: Any?) throws -> String {
        let parts = (idToken as? String ?? "").split(separator: ".")
        var payload = String(parts.count == 3 ? parts[1] : "").replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        let claims = try JSONSerialization.jsonObject(with: try XCTUnwrap(Data(base64Encoded: payload))) as? [String: Any]
        return try XCTUnwrap(claims?["sid"] as? String)
    }

    /// The logout tokens the receiver verified, as claims.
    private func logoutTokens(count: Int) async -> [[String: Any]] {
        let arrived = await Condition.wait(timeout: 20) { [received] in received.withLock { $0.count >= count } }
        XCTAssertTrue(arrived, "\(count) logout tokens reach the application")
        return received.withLock { $0 }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    // MARK: The tests

    func testAnApplicationSignsThePersonOutEverywhereItsOwnHintProves() async throws {
        try server.provedAccount("Grace", at: clock.now)
        try server.provedAccount("Control", at: clock.now)
        let cookie = try await server.signedInCookie("Grace"), control = try await server.signedInCookie("Control")
        let grace = try await tokens(cookie: cookie), other = try await tokens(cookie: control)

        // Somewhere the application did not register: a page, never a redirect.
        let elsewhere = try await server.request("GET", "/oauth2/logout?client_id=wiki&post_logout_redirect_uri="
                                                     + AuthorizationRequest.encode("https://evil.example/"), headers: ["Cookie": cookie])
        XCTAssertEqual(elsewhere.status, 400)
        XCTAssertNil(elsewhere.headers["location"])
        // A link without the application's token for this session: the person is asked.
        let asked = try await server.request("GET", "/oauth2/logout?client_id=wiki&state=s1&post_logout_redirect_uri="
                                                + AuthorizationRequest.encode(goodbye), headers: ["Cookie": cookie])
        XCTAssertEqual(asked.status, 200)
        XCTAssertTrue(asked.body.contains("data-logout-confirm"), asked.body)
        let still = try await server.request("GET", "/auth", headers: ["Cookie": cookie]).status
        XCTAssertEqual(still, 200, "still signed in")
        // The control's own ID token is not this session's: asked too.
        let foreign = try await server.request("GET", "/oauth2/logout?id_token_hint=\(other["id_token"] as? String ?? "")",
                                               headers: ["Cookie": cookie])
        XCTAssertEqual(foreign.status, 200)
        XCTAssertTrue(foreign.body.contains("data-logout-confirm"))

        // The application's ID token for this session: signed out at once, back where it asked.
        let hinted = try await server.request("GET", "/oauth2/logout?state=s2&id_token_hint=\(grace["id_token"] as? String ?? "")"
                                                 + "&post_logout_redirect_uri=" + AuthorizationRequest.encode(goodbye),
                                              headers: ["Cookie": cookie])
        XCTAssertEqual(hinted.status, 303, hinted.body)
        XCTAssertEqual(hinted.headers["location"], goodbye + "?state=s2")
        let here = try await server.request("GET", "/auth", headers: ["Cookie": cookie]).status
        XCTAssertEqual(here, 401, "signed out here")
        let there = try await userinfo(grace)
        XCTAssertEqual(there, 401, "and out of the application")
        let tokens = await logoutTokens(count: 1)
        XCTAssertEqual(tokens.first?["aud"] as? String, "wiki")
        XCTAssertEqual(tokens.first?["sid"] as? String, try sid(of: grace["id_token"]))
        XCTAssertEqual(tokens.first?["iss"] as? String, server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")))

        let controlThere = try await userinfo(other)
        XCTAssertEqual(controlThere, 200, "the control person is still signed in to the application")
        let controlHere = try await server.request("GET", "/auth", headers: ["Cookie": control]).status
        XCTAssertEqual(controlHere, 200)
    }

    func testSigningOutHereOrFromTheAccountPageReachesTheApplicationsThroughTheBackChannel() async throws {
        try server.provedAccount("Grace", at: clock.now)
        let cookie = try await server.signedInCookie("Grace")
        let grace = try await tokens(cookie: cookie)
        let signedOut = try await server.request("POST", "/signout", headers: ["Cookie": cookie])
        XCTAssertEqual(signedOut.status, 303)
        // The periodic sweep finds the grant whose session ended.
        clock.advance(by: 61)
        let tokens = await logoutTokens(count: 1)
        XCTAssertEqual(tokens.first?["sid"] as? String, try sid(of: grace["id_token"]))
        let after = try await userinfo(grace)
        XCTAssertEqual(after, 401)
        // The confirmation page's post signs out too (nothing else left to tell).
        let page = try await server.request("POST", "/oauth2/logout", body: FormURLEncoder.encode([("lang", "en")]))
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.body.contains("data-signed-out"), page.body)
    }
}
