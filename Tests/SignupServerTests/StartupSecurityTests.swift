import WebKernel
import Foundation
import HTTPTestSupport
import SignupServer
import XCTest

/// Issue 40, items 3, 5, 9 and 14, as an operator meets them: what the server says at start
/// about the site's origin and plain-text mail, and the values it refuses before serving.
final class StartupSecurityTests: XCTestCase {
    func testOriginsAreNormalizedAndAnythingMoreThanAnOriginIsRefused() {
        for (given, expected) in [("https://Signup.Example.com:443/", "https://signup.example.com"),
                                  ("http://localhost:8080", "http://localhost:8080"),
                                  ("HTTP://[::1]:80", "http://[::1]"), ("https://app.example.com/", "https://app.example.com")] {
            XCTAssertEqual(try? SiteOrigin.normalized(given).get(), expected, given)
        }
        for refused in ["https://signup.example.com/app", "https://signup.example.com/?x=1", "https://u@signup.example.com",
                        "https://signup.example.com/#top", "signup.example.com", "ftp://signup.example.com", "https://"] {
            XCTAssertNil(try? SiteOrigin.normalized(refused).get(), refused)
        }
    }

    func testAPublicOriginWithAPathStopsTheStartWithTheReason() throws {
        let (status, _, errors) = try ServerProcess.run(["--port", "0", "--public-origin", "https://signup.example.com/app"])
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(errors.contains("--public-origin") && errors.contains("path"), errors)
        let key = try ServerProcess.run(["--port", "0"], environment: ["LIVESIGNUP_MAIL_KEY": "not-hex"])
        XCTAssertNotEqual(key.status, 0)
        XCTAssertTrue(key.errors.contains("LIVESIGNUP_MAIL_KEY: must be 64 hex digits"), key.errors)
        XCTAssertFalse(key.errors.contains("not-hex"), "a refused secret is not repeated: \(key.errors)")
    }

    func testTheStartSaysWhenTheSiteFollowsTheRequestAndWhenMailMayGoInClear() async throws {
        let following = try ServerProcess(logLevel: "notice")
        defer { following.removeData() }
        try await following.start()
        let logReader = following.logReader
        let said = await Condition.wait(timeout: 10) { logReader().contains("No --public-origin") }
        XCTAssertTrue(said, following.log)
        _ = await following.stop(with: SIGTERM)

        let fixed = try ServerProcess(arguments: ["--public-origin", "https://Signup.Example.com:443/",
                                                  "--smtp-url", "smtp://mailer@192.0.2.25:587", "--mail-from", "n@example.org",
                                                  "--smtp-allow-plaintext"], logLevel: "notice")
        defer { fixed.removeData() }
        try await fixed.start()
        let fixedLog = fixed.logReader
        let warned = await Condition.wait(timeout: 10) { fixedLog().contains("--smtp-allow-plaintext: mail to 192.0.2.25 goes unencrypted") }
        XCTAssertTrue(warned, fixed.log)
        XCTAssertFalse(fixed.log.contains("No --public-origin"), "the configured origin is the site")
        let base = URL(string: "http://127.0.0.1:\(fixed.port)")!
        let ours = try await TestServer.request(to: base, "POST", "/sessions", body: "",
                                                headers: ["Origin": "https://signup.example.com"])
        XCTAssertNotEqual(ours.status, 403, "the normalized origin matches what browsers send")
        let theirs = try await TestServer.request(to: base, "POST", "/sessions", body: "",
                                                  headers: ["Origin": "http://evil.example", "Host": "evil.example"])
        XCTAssertEqual(theirs.status, 403, "a request naming another host is not this site")
        _ = await fixed.stop(with: SIGTERM)
    }
}
