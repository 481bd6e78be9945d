import AccountStoreTestSupport
import Foundation
import HTTPTestSupport
import LiveSignupClient
import OpenIDConnect
import SignupDomain
import SignupPostgres
import XCTest

/// Issue 56: two instances on one PostgreSQL database are one OpenID provider. A code issued
/// by one is redeemed by the other, once: raced through both at the same moment, exactly one
/// redemption gets tokens, and the other, a second use, revokes them.
final class OpenIDProviderInstancesTests: XCTestCase {
    private var instances: [ServerProcess] = []
    private let secret = "instances-secret-0123456789-abcdefghij"
    private let redirect = "http://127.0.0.1:9/callback"
    private let verifier = "a-verifier-of-forty-three-or-more-characters-0123"
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-oidc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        for instance in instances { instance.removeData() }
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func start(_ id: String, database: String, policy: String) async throws -> ServerProcess {
        let instance = try ServerProcess(arguments: ["--instance-id", id, "--policy", policy, "--argon2-preset", "owasp-minimum"],
                                         database: database, environment: ["WIKI_SECRET": secret])
        instances.append(instance)
        try await instance.start()
        return instance
    }

    private func redeem(_ code: String, at port: UInt16) throws -> (status: Int, body: String) {
        try Self.redeem(code, at: port, redirect: redirect, verifier: verifier, secret: secret)
    }

    private static func redeem(_ code: String, at port: UInt16, redirect: String, verifier: String, secret: String)
        throws -> (status: Int, body: String) {
        let body = FormURLEncoder.encode([("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect),
                                          ("code_verifier", verifier), ("client_id", "wiki"), ("client_secret", secret)])
        let answer = try RawExchange.send(port: port, from: "127.0.0.1", "POST", "/oauth2/token", body: body,
                                          headers: ["Content-Type": "application/x-www-form-urlencoded"])
        return (answer.status, answer.body)
    }

    func testACodeIssuedByOneInstanceIsRedeemedByTheOtherOnce() async throws {
        let cluster = try PostgresTestCluster.shared()
        let database = try cluster.makeDatabase()
        let policy = directory.appendingPathComponent("policy.yaml")
        try """
            name: two-instances
            clients:
              - id: wiki
                name: The Wiki
                redirect_uris: [\(redirect)]
                first_party: true
                client_secret_env: WIKI_SECRET
            """.write(to: policy, atomically: true, encoding: .utf8)
        let web1 = try await start("web1", database: database, policy: policy.path)
        let web2 = try await start("web2", database: database, policy: policy.path)
        let store = try PostgresAccountStore(location: PostgresLocation(url: database))
        let password = "Two-Instances-1999"
        _ = try store.createAccount(NewAccount(username: "Grace", email: "grace@example.org",
                                               passwordHash: try Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 << 20).hash(password),
                                               formToken: "grace-form"))
        let signedIn = try RawExchange.send(port: web1.port, from: "127.0.0.1", "POST", "/signin",
                                            body: FormURLEncoder.encode([("username", "Grace"), ("password", password)]),
                                            headers: ["Content-Type": "application/x-www-form-urlencoded"])
        XCTAssertEqual(signedIn.status, 303, signedIn.body)
        let cookie = try XCTUnwrap(signedIn.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        func code() throws -> String {
            let query = FormURLEncoder.encode([
                ("response_type", "code"), ("client_id", "wiki"), ("redirect_uri", redirect), ("scope", "openid"),
                ("code_challenge", PKCE.challenge(for: verifier)), ("code_challenge_method", "S256")])
            let answer = try RawExchange.send(port: web1.port, from: "127.0.0.1", "GET", "/oauth2/authorize?" + query,
                                              headers: ["Cookie": cookie])
            XCTAssertEqual(answer.status, 303, answer.body)
            return try XCTUnwrap(URLComponents(string: answer.headers["location"] ?? "")?.queryItems?.first { $0.name == "code" }?.value)
        }

        // Issued on one, redeemed on the other; then the first one is a second use.
        let first = try code()
        let redeemed = try redeem(first, at: web2.port)
        XCTAssertEqual(redeemed.status, 200, redeemed.body)
        let token = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(redeemed.body.utf8)) as? [String: Any])?["access_token"] as? String)
        XCTAssertEqual(try RawExchange.send(port: web1.port, from: "127.0.0.1", "GET", "/oauth2/userinfo",
                                            headers: ["Authorization": "Bearer \(token)"]).status, 200, "known on every instance")
        let again = try redeem(first, at: web1.port)
        XCTAssertEqual(again.status, 400)
        XCTAssertTrue(again.body.contains("the code was used before"), again.body)
        XCTAssertEqual(try RawExchange.send(port: web2.port, from: "127.0.0.1", "GET", "/oauth2/userinfo",
                                            headers: ["Authorization": "Bearer \(token)"]).status, 401, "revoked on every instance")

        // Raced through both at once: exactly one gets tokens.
        let (port1, port2, uri, proof, key) = (web1.port, web2.port, self.redirect, self.verifier, self.secret)
        for _ in 0..<5 {
            let raced = try code()
            async let one = Task.detached { try Self.redeem(raced, at: port1, redirect: uri, verifier: proof, secret: key).status }.value
            async let other = Task.detached { try Self.redeem(raced, at: port2, redirect: uri, verifier: proof, secret: key).status }.value
            let statuses = try await [one, other].sorted()
            XCTAssertEqual(statuses, [200, 400], "one redemption, and the other refused")
        }
        // The operator sees it, by application and result, summed over the instances.
        func count(_ result: String) throws -> Int {
            try [web1.port, web2.port].map { port in
                let metrics = try RawExchange.send(port: port, from: "127.0.0.1", "GET", "/metrics").body
                return metrics.firstMatch(of: try Regex("livesignup_openid_total\\{client=\"wiki\",result=\"\(result)\"\\} ([0-9]+)"))
                    .flatMap { Int($0.output[1].substring ?? "") } ?? 0
            }.reduce(0, +)
        }
        XCTAssertEqual(try count("code"), 6)
        XCTAssertEqual(try count("tokens"), 6, "one redemption of each code")
        XCTAssertEqual(try count("invalid_grant"), 6, "and one second use of each")
        for instance in instances { _ = await instance.stop(with: SIGTERM) }
    }
}
