import Foundation
import LiveSignupClient
import XCTest

/// The small sign-in form proves an account is real.
final class SignInTests: XCTestCase {
    var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer()
    }

    override func tearDown() {
        server.stop()
    }

    private func signUp(_ username: String, password: String) async throws {
        let form = try await server.client.openForm()
        let body = FormURLEncoder.encode([("token", form.token), ("username", username), ("email", "x@example.com"),
                                          ("password", password), ("confirm", password)])
        let response = try await server.request("POST", "/signup", body: body)
        XCTAssertEqual(response.status, 303, response.body)
    }

    private func signIn(_ username: String, _ password: String) async throws -> (status: Int, headers: [String: String], body: String) {
        try await server.request("POST", "/signin", body: FormURLEncoder.encode([("username", username), ("password", password)]))
    }

    func testRightPasswordSignsInAndGreets() async throws {
        try await signUp("Grace", password: "Cobol-Rocks-1959")
        let response = try await signIn("grace", "Cobol-Rocks-1959")
        XCTAssertEqual(response.status, 303)
        XCTAssertEqual(response.headers["location"], "/welcome")
        let cookie = try XCTUnwrap(response.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let welcome = try await server.request("GET", "/welcome", headers: ["Cookie": cookie])
        XCTAssertTrue(welcome.body.contains("Welcome, <bdi>Grace</bdi>!"), "the name isolated for direction")
    }

    func testWrongPasswordUnknownNameAndReservedNameAllFailAlike() async throws {
        try await signUp("Grace", password: "Cobol-Rocks-1959")
        for (username, password) in [("grace", "Cobol-Rocks-1958"), ("nobody", "Cobol-Rocks-1959"), ("alice", "!")] {
            let response = try await signIn(username, password)
            XCTAssertEqual(response.status, 401, username)
            XCTAssertNil(response.headers["set-cookie"])
            XCTAssertTrue(response.body.contains("The username or password is incorrect"), username)
            XCTAssertTrue(response.body.contains("<title>Error: Sign in"), username)
        }
    }

    func testSignInPageRenders() async throws {
        let page = try await server.request("GET", "/signin")
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.body.contains(#"name="password""#))
        XCTAssertTrue(page.body.contains(#"autocomplete="current-password""#))
    }
}
