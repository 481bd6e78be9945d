import Foundation
import LiveSignupClient
import MicroHTTPD
@testable import SignupServer
@testable import WebKernel
import XCTest

/// `return_to` sends a person back to the application after signing in or up, but only to
/// this site or an allowed origin: an open redirect would let anyone use this trusted page to
/// send people to a look-alike. Every other form lands on `/welcome`.
final class ReturnToTests: XCTestCase {
    private let policy = ReturnTo(
        allowedOrigins: ["https://app.example.com"],
        sameOrigin: SameOriginPolicy(publicOrigins: ["https://signup.example.com"],
                                     addresses: ClientAddressResolver(trustedProxies: [])))
    private let request = HTTPRequest(method: "GET", path: "/signin", headers: HTTPHeaders([("Host", "127.0.0.1:8080")]))

    func testThisSiteAndAllowedOriginsAreKept() {
        for kept in ["/", "/dashboard", "/dashboard?tab=1&x=2#top", "/a/b%20c",
                     "https://signup.example.com/settings",
                     "https://app.example.com/", "https://APP.example.com:443/x?y=1", "https://app.example.com/%2F%2Fx"] {
            XCTAssertEqual(policy.validated(kept, for: request), kept, kept)
        }
    }

    /// Issue 40, item 3: with a public origin configured, the request's `Host` (and a trusted
    /// proxy's `X-Forwarded-Host`) is the client's word, and names no site of ours; without
    /// one, the site follows the request (as the start-up log says).
    func testAHostTheRequestNamesIsThisSiteOnlyWithoutAPublicOrigin() {
        let proxy = ClientAddressResolver(trustedProxies: [IPAddressRange("127.0.0.1")!])
        let configured = ReturnTo(allowedOrigins: [], sameOrigin: SameOriginPolicy(
            publicOrigins: ["https://signup.example.com"], addresses: proxy))
        let forwarded = HTTPRequest(method: "GET", path: "/signin", headers: HTTPHeaders([
            ("Host", "evil.example"), ("X-Forwarded-Host", "evil.example"), ("X-Forwarded-Proto", "https")]),
            remoteAddress: "127.0.0.1")
        XCTAssertNil(configured.validated("https://evil.example/phish", for: forwarded), "a forwarded host is not believed")
        XCTAssertNil(configured.validated("http://127.0.0.1:8080/app", for: request), "nor the Host")
        XCTAssertEqual(configured.sameOrigin.siteOrigins(for: forwarded), ["https://signup.example.com"])

        let following = ReturnTo(allowedOrigins: [], sameOrigin: SameOriginPolicy(publicOrigins: [], addresses: proxy))
        XCTAssertEqual(following.validated("http://127.0.0.1:8080/app", for: request), "http://127.0.0.1:8080/app")
        XCTAssertEqual(following.validated("https://evil.example/x", for: forwarded), "https://evil.example/x",
                       "without --public-origin the site is what the request says (logged at start)")
    }

    func testEverythingElseIsIgnored() {
        let refused = [
            "https://evil.example/", "http://app.example.com/",  // another origin; another scheme
            "https://app.example.com.evil.example/", "https://app.example.com:8443/",
            "//evil.example/", "///evil.example", "/\\evil.example", "\\\\evil.example", "/%2F/evil.example",
            "/%2f%2fevil.example", "%2F%2Fevil.example", "/%5Cevil.example", "/%255C%255Cevil.example",
            "javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,hi", "vbscript:x",
            "https://user@app.example.com/", "https://app.example.com@evil.example/",
            "https:evil.example", "https:/evil.example", "http:\\\\evil.example",
            "evil.example", " /dashboard", "/dash board", "/a\u{0}b", "/a\nLocation: https://evil.example",
            "/a\u{2028}b", "https://evil.example\u{3002}com/", "", String(repeating: "a", count: 3000),
            // Found by fuzzing: a port no browser accepts was read as no port at all.
            "https://app.example.com:4430000000000000000000/", "https://app.example.com:65536/",
            // Found by CI's fuzz check: the same port, with non-ASCII after it, which Foundation
            // percent-encodes and then reports no port range at all.
            "https://app.example.com:44300000000000000000?q=\u{FFFD}", "https://app.example.com:4430000000000000000000/é",
            // Found by fuzzing: a second '/' carrying a mark is one Character, not "/", but a
            // browser reads "//" and a host it drops U+FE0F from: an open redirect.
            "//\u{FE0F}evil.example/", "//\u{301}evil.example", "/%2F\u{FE0F}evil.example",
        ]
        for url in refused {
            XCTAssertNil(policy.validated(url, for: request), url.debugDescription)
        }
        XCTAssertNil(policy.validated(nil, for: request))
    }

    func testAsTheLastParameterItRunsToTheEndOfTheQuery() {
        let request = HTTPRequest(method: "GET", path: "/signin",
                                  query: [("lang", "de"), ("return_to", "https://app.example.com/x?a=1"), ("b", "2"), ("c", "")])
        XCTAssertEqual(ReturnTo.requested(in: request), "https://app.example.com/x?a=1&b=2&c",
                       "a proxy appends the original URL unencoded (nginx cannot encode it)")
    }

    func testSignInAndSignUpGoBackThereAndNowhereElse() async throws {
        let server = try TestServer { $0.returnToOrigins = ["https://app.example.com"] }
        defer { server.stop() }
        let page = try await server.request("GET", "/signin?return_to=https://app.example.com/inbox?folder=1&sort=new")
        XCTAssertTrue(page.body.contains(#"<input type="hidden" name="return_to" value="https://app.example.com/inbox?folder=1&amp;sort=new">"#),
                      "the form carries it, escaped")
        let evilPage = try await server.request("GET", "/signin?return_to=//evil.example/")
        XCTAssertFalse(evilPage.body.contains("evil.example"), "an unsafe one is not even carried")

        let form = try await server.client.openForm()
        let signUpPage = try await server.request("GET", "/?return_to=/reports")
        XCTAssertTrue(signUpPage.body.contains(#"name="return_to" value="/reports""#), "the sign-up page carries it too")
        let password = "Orbit-Lantern-Quietly-9"
        func signUp(_ returnTo: String, _ name: String, token: String) async throws -> String? {
            let body = FormURLEncoder.encode([("token", token), ("username", name), ("email", "\(name)@example.org"),
                                              ("password", password), ("confirm", password), ("return_to", returnTo)])
            return try await server.request("POST", "/signup", body: body).headers["location"]
        }
        let landed = try await signUp("https://app.example.com/welcome-aboard", "returner", token: form.token)
        XCTAssertEqual(landed, "https://app.example.com/welcome-aboard")
        let other = try await server.client.openForm()
        let refused = try await signUp("https://evil.example/", "wanderer", token: other.token)
        XCTAssertEqual(refused, "/welcome", "anything else lands on the welcome page")

        for (returnTo, expected) in [("/inbox", "/inbox"), ("javascript:alert(1)", "/welcome")] {
            let body = FormURLEncoder.encode([("username", "returner"), ("password", password), ("return_to", returnTo)])
            let answer = try await server.request("POST", "/signin", body: body)
            XCTAssertEqual(answer.status, 303)
            XCTAssertEqual(answer.headers["location"], expected, returnTo)
        }
    }
}
