import Foundation
import LiveSignupClient
import SignupDomain
@testable import Identity
import XCTest

/// People for the tests of what a signed-in person does (the OpenID provider's): an account
/// with a proved address made the store's way, and a browser signed in to it with its password.
extension TestServer {
    static let peoplesPassword = "A-Person-Signs-In-1984"

    /// `username`'s account, its address proved, made as a sign-up whose address was proved.
    @discardableResult
    func provedAccount(_ username: String, at now: Date) throws -> Account {
        let token = "\(username)-form"
        let pending = PendingSignup.starting(
            formToken: token, username: username, email: "\(username.lowercased())@example.org",
            passwordHash: try Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 << 20).hash(Self.peoplesPassword), profile: [:],
            language: "en", returnTo: "", codeHash: "unused", linkHash: "unused-\(username)", at: now, lifetime: 600)
        try store.startPendingSignup(pending, mail: OutboxEvent(id: OutboxEvent.makeID(), type: "mail.test", body: "",
                                                               createdAt: now, channel: .mail), at: now)
        return try XCTUnwrap(try store.completePendingSignup(formToken: token, at: now, announce: false))
    }

    /// The session cookie of a browser signed in as `username` with its password.
    func signedInCookie(_ username: String, file: StaticString = #filePath, line: UInt = #line) async throws -> String {
        let response = try await request("POST", "/signin", body: FormURLEncoder.encode([
            ("username", username), ("password", Self.peoplesPassword)]))
        XCTAssertEqual(response.status, 303, response.body, file: file, line: line)
        return try XCTUnwrap(response.headers["set-cookie"]?.components(separatedBy: ", ")
            .first { $0.hasPrefix(SignedInUsers.plainCookieName + "=") && !$0.hasPrefix(SignedInUsers.plainCookieName + "=;") }?
            .split(separator: ";").first.map(String.init), file: file, line: line)
    }
}
