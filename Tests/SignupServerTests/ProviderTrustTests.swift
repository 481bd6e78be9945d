import Foundation
import LiveSignupClient
import SignupDomain
@testable import Identity
@testable import SignupServer
import XCTest

/// Issue 52, item 9: whether a provider's address counts as proved is decided when the
/// sign-up is sent, from the configuration then, never read back from the cookie that held the
/// provider's answer: an operator who stops trusting a provider is obeyed at once.
final class ProviderTrustTests: XCTestCase {
    private func server(trusting: Bool) throws -> TestServer {
        try TestServer { configuration in
            var policy = Policy.classic
            var declaration = ProviderDeclaration(id: "acme", name: "Acme", issuer: "https://id.acme.example", clientID: "client",
                                                  clientSecretVariable: "ACME_SECRET")
            declaration.trustsEmailVerified = trusting
            policy.providers = [declaration]
            configuration.policy = FormPolicy(policy)
            configuration.providerClientSecrets = ["acme": "a-secret"]
            configuration.emailVerification = EmailVerificationSettings(
                mail: MailSettings(transport: CapturedMail(), from: "Tests <noreply@example.org>"))
        }
    }

    /// The provider said it verified the address in both; only the configuration differs.
    private func signUpThroughTheProvider(_ server: TestServer, username: String) async throws
        -> (status: Int, headers: [String: String], body: String) {
        let identity = ProviderCookies.Identity(purpose: .signup, provider: "acme", issuer: "https://id.acme.example",
                                                subject: "subject-\(username)", email: "\(username)@example.org",
                                                providerSaysVerified: true, issuedAt: Date())
        let cookie = try XCTUnwrap(server.app.services.providerSignIn.cookies.identityCookie(identity).split(separator: ";").first)
        let form = try await server.client.openForm()
        return try await server.request("POST", "/signup", body: FormURLEncoder.encode([
            ("token", form.token), ("username", username), ("email", "\(username)@example.org"), ("credential", "provider"),
        ]), headers: ["Cookie": String(cookie)])
    }

    func testTheProvidersWordProvesAnAddressOnlyWhileTheConfigurationTrustsIt() async throws {
        let distrusting = try server(trusting: false)
        defer { distrusting.stop() }
        let refused = try await signUpThroughTheProvider(distrusting, username: "doubted")
        XCTAssertEqual(refused.status, 403, refused.body)
        XCTAssertTrue(refused.body.contains("Acme"), refused.body)
        XCTAssertNil(try distrusting.store.account(named: "doubted"), "nothing stored")

        let trusting = try server(trusting: true)
        defer { trusting.stop() }
        let made = try await signUpThroughTheProvider(trusting, username: "trusted")
        XCTAssertEqual(made.status, 303, made.body)
        XCTAssertNotNil(try trusting.store.account(named: "trusted")?.emailVerifiedAt, "proved by the trusted provider's word")
    }
}
