import Foundation
import HTTPTestSupport
import LiveSignupClient
import SignupDomain
@testable import Identity
@testable import SignupServer
import XCTest

/// Issue 43's list of devices starts at sign-in: each session records its browser, coarsely
/// (family and system, no versions), and its network, never the whole address.
final class DeviceLabelTests: XCTestCase {
    func testBrowsersAreNamedByFamilyAndSystemOnly() {
        let cases: [(String?, String)] = [
            ("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "Firefox · Linux"),
            ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
             "Edge · Windows"),
            ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
             "Safari · macOS"),
            ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0 Mobile/15E148 Safari/604.1",
             "Chrome · iOS"),
            ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
             "Chrome · Android"),
            ("Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 OPR/115.0",
             "Opera · ChromeOS"),
            ("curl/7.88.1", "curl"),
            ("", ""),
            (nil, ""),
            ("something nobody knows", ""),
        ]
        for (agent, label) in cases {
            XCTAssertEqual(DeviceLabel.of(userAgent: agent), label, agent ?? "nil")
        }
        // A header of any length is read only as far as families are named.
        XCTAssertEqual(DeviceLabel.of(userAgent: String(repeating: "x", count: 100_000) + " Firefox/1"), "")
    }

    func testASignInRecordsItsDeviceAndNetwork() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let hash = try Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024).hash("Device-Listed-1")
        let account = try server.store.createAccount(NewAccount(username: "listed", email: "listed@example.org",
                                                                passwordHash: hash, formToken: "listed-form"))
        let signedIn = try await server.request(
            "POST", "/signin", body: FormURLEncoder.encode([("username", "listed"), ("password", "Device-Listed-1")]),
            headers: ["User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"],
            over: .socket)
        XCTAssertEqual(signedIn.status, 303, signedIn.body)
        let sessions = try server.store.signInSessions(ofAccount: account.id, at: Date(),
                                                       rules: SignInSessionRules(idleTimeout: 3600))
        XCTAssertEqual(sessions.map(\.device), ["Firefox · Linux"])
        XCTAssertEqual(sessions.map(\.network), ["127.0.0.0/24"], "the network, never the whole address")
    }
}
