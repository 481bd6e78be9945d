import Foundation
import HTTPTestSupport
import XCTest

/// Issue 56: the example configuration with one application starts as the docs say, with
/// the application's secret from the environment, and refuses to start without it, naming
/// the variable.
final class OpenIDProviderConfigurationTests: XCTestCase {
    private let example = TestServer.repositoryRoot.appendingPathComponent("docs/examples/livesignup-with-an-application.yaml").path

    func testTheExampleWithOneApplicationStartsWithItsSecretAndNotWithout() async throws {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LIVESIGNUP_") }
        let missing = try ServerProcess.run(["config", "check", example], environment: environment)
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.errors.contains("The application 'local-app' needs its client secret in the environment variable LIVESIGNUP_LOCAL_APP_SECRET"),
                      missing.errors)
        environment["LIVESIGNUP_LOCAL_APP_SECRET"] = "short"
        let short = try ServerProcess.run(["config", "check", example], environment: environment)
        XCTAssertTrue(short.errors.contains("give at least 32 (openssl rand -hex 32)"), short.errors)

        environment["LIVESIGNUP_LOCAL_APP_SECRET"] = String(repeating: "5e", count: 32)
        let server = try ServerProcess(arguments: ["--config", example], environment: environment)
        defer { server.removeData() }
        try await server.start()
        let discovery = try RawExchange.send(port: server.port, from: "127.0.0.1", "GET", "/.well-known/openid-configuration")
        XCTAssertEqual(discovery.status, 200)
        let document = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(discovery.body.utf8)) as? [String: Any])
        XCTAssertEqual(document["issuer"] as? String, "http://127.0.0.1:8080", "the configured origin, not the request's Host")
        XCTAssertEqual(document["token_endpoint"] as? String, "http://127.0.0.1:8080/oauth2/token")
        _ = await server.stop(with: SIGTERM)
    }
}
