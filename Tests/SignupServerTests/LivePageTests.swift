@testable import Identity
import Foundation
import LiveSignupClient
import SignupServer
import XCTest

/// The page as served: what a browser (with or without JavaScript) receives from `GET /`.
final class LivePageTests: XCTestCase {
    var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer()
    }

    override func tearDown() {
        server.stop()
    }

    func testPageHasTokenFieldsAndEveryRequirementUnmet() async throws {
        let page = try await server.request("GET", "/")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.headers["content-type"], "text/html; charset=utf-8")
        XCTAssertEqual(page.headers["cache-control"], "no-store")
        let html = page.body

        let token = try XCTUnwrap(html.firstMatch(of: #/<input type="hidden" name="token" value="([a-z0-9-]+)\.([0-9a-f]+)">/#))
        XCTAssertEqual(String(token.1), InstanceID.fromHostName(), "the instance id comes first")
        XCTAssertEqual(token.2.count, 56, "random part, issue time and HMAC as 56 hex digits")
        XCTAssertTrue(html.contains("<h1>Create an account</h1>"))

        for field in ["username", "email", "password", "confirm"] {
            XCTAssertTrue(html.contains(#"name="\#(field)""#), "input \(field)")
            XCTAssertTrue(html.contains(#"data-message="\#(field)""#), "message slot for \(field)")
            XCTAssertTrue(html.contains(#"aria-describedby="\#(field)-requirements \#(field)-message""#))
        }
        let requirementIDs = html.matches(of: #/data-requirement="([a-z.]+)" data-state="([a-z]+)"/#)
            .map { (String($0.1), String($0.2)) }
        XCTAssertEqual(requirementIDs.map(\.0), [
            "username.length", "username.charset", "username.available", "email.format",
            "password.length", "password.uppercase", "password.common", "password.strength", "confirm.match",
            "passkey.created",
        ], "the passkey's step follows the passwords, put away until the person chooses it")
        XCTAssertTrue(html.contains("<template data-passkey-step>"), "inert until the person chooses a passkey")
        XCTAssertTrue(html.contains(#"<input type="hidden" name="credential" value="password">"#))
        XCTAssertTrue(html.contains(#"<p class="passkey-choice" data-passkey-choice hidden>"#),
                      "offered only where the script finds WebAuthn")
        XCTAssertTrue(requirementIDs.allSatisfy { $0.1 == "unmet" })
        XCTAssertTrue(html.contains("4 to 32 characters"))
        XCTAssertTrue(html.contains("At least 8 characters"))

        // Served enabled so the form works without JavaScript; the script disables it.
        let button = try XCTUnwrap(html.firstMatch(of: #/<button[^>]*data-submit[^>]*>/#)?.0)
        XCTAssertFalse(button.contains("disabled"))
    }

    func testEveryPageViewGetsItsOwnTokenAndCostsNoSessionUntilUsed() async throws {
        let first = try await server.client.openForm()
        let second = try await server.client.openForm()
        XCTAssertNotEqual(first.token, second.token)
        XCTAssertEqual(server.app.sessionCount, 0, "a page view holds no memory on the server")
        _ = try await first.edit("email", to: "a@example.com")
        XCTAssertEqual(server.app.sessionCount, 1, "the first edit builds the session")
    }

    /// The blank page is rendered once at start; every visit must still get its own
    /// genuine token, wherever the template puts it, and nothing else may differ.
    func testEveryPageGetsItsOwnGenuineTokenAndIsOtherwiseTheSame() async throws {
        let first = try await server.request("GET", "/").body
        let second = try await server.request("GET", "/").body
        let tokenPattern = #/[a-z0-9-]+\.[0-9a-f]{56}/#
        let firstTokens = Set(first.matches(of: tokenPattern).map { String($0.0) })
        let secondTokens = Set(second.matches(of: tokenPattern).map { String($0.0) })
        XCTAssertEqual(firstTokens.count, 1)
        XCTAssertEqual(secondTokens.count, 1)
        XCTAssertNotEqual(firstTokens, secondTokens)
        XCTAssertFalse(first.contains("\u{1}"), "no slot marker left in the page")
        XCTAssertEqual(first.replacing(tokenPattern, with: "T"), second.replacing(tokenPattern, with: "T"))
        let edit = try await FormSession(client: server.client, token: firstTokens.first!).edit("email", to: "a@example.com")
        XCTAssertTrue(edit.applied, "the page's token opens a live session")
    }

    func testStaticFilesHaveTypeCachingAndNothingOutsidePublic() async throws {
        let page = try await server.request("GET", "/").body
        let scriptPath = try XCTUnwrap(page.firstMatch(of: #/src="(/static/app\.js\?v=[0-9a-f]+)"/#)?.1)
        let script = try await server.request("GET", String(scriptPath))
        XCTAssertEqual(script.status, 200)
        XCTAssertEqual(script.headers["content-type"], "text/javascript; charset=utf-8")
        XCTAssertEqual(script.headers["cache-control"], "public, max-age=31536000, immutable")
        let etag = try XCTUnwrap(script.headers["etag"])

        let stylesheet = try await server.request("GET", "/static/style.css")
        XCTAssertEqual(stylesheet.status, 200)
        XCTAssertEqual(stylesheet.headers["content-type"], "text/css; charset=utf-8")
        XCTAssertEqual(stylesheet.headers["cache-control"], "no-cache", "an unversioned URL must revalidate")

        let revalidated = try await server.request("GET", "/static/app.js", headers: ["If-None-Match": etag])
        XCTAssertEqual(revalidated.status, 304)

        for path in ["/static/missing.js", "/static/../Package.swift", "/static/%2e%2e/Package.swift",
                     "/Package.swift", "/Templates/signup.mustache", "/static/"] {
            let response = try await server.request("GET", path)
            XCTAssertEqual(response.status, 404, path)
        }
    }
}
