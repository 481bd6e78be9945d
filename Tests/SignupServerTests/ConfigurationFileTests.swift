import Foundation
import HTTPTestSupport
import XCTest

/// Issue 55: `serve --config FILE` as an operator runs it. The example file starts the server;
/// one setting given by the file, the environment and a flag resolves by precedence; a secret
/// comes from a `_FILE` and `config print` never shows it; a bad file is refused with each
/// problem at its `file:line` and nothing starts; the committed reference and example are
/// what the declarations generate.
final class ConfigurationFileTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    private func write(_ name: String, _ text: String) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func page(_ server: ServerProcess) throws -> String {
        try RawExchange.send(port: server.port, from: "127.0.0.1", "GET", "/").body
    }

    private var example: String { TestServer.repositoryRoot.appendingPathComponent("docs/examples/livesignup.yaml").path }

    func testTheServerStartsFromTheExampleFileAndServesTheLiveForm() async throws {
        // The test's own port and database as flags, which win over the file's.
        let server = try ServerProcess(arguments: ["--config", example], logLevel: "info")
        defer { server.removeData() }
        try await server.start()
        let body = try page(server)
        XCTAssertTrue(body.contains(#"name="token""#), String(body.prefix(300)))
        XCTAssertTrue(server.log.contains("Configuration read"), "the server says which file it read: \(server.log)")
        XCTAssertTrue(server.log.contains(example), server.log)
        _ = await server.stop(with: SIGTERM)
    }

    func testOneSettingResolvesByPrecedenceFlagThenEnvironmentThenFile() async throws {
        let file = try write("policy.yaml", "policy:\n  source: nist\n")
        // The file alone: nist (15 characters).
        let fromFile = try ServerProcess(arguments: ["--config", file])
        defer { fromFile.removeData() }
        try await fromFile.start()
        XCTAssertTrue(try page(fromFile).contains("At least 15 characters"))
        _ = await fromFile.stop(with: SIGTERM)
        // The environment over the file: classic (8 characters).
        let fromEnvironment = try ServerProcess(arguments: ["--config", file], environment: ["LIVESIGNUP_POLICY": "classic"])
        defer { fromEnvironment.removeData() }
        try await fromEnvironment.start()
        XCTAssertTrue(try page(fromEnvironment).contains("At least 8 characters"))
        _ = await fromEnvironment.stop(with: SIGTERM)
        // A flag over both: nist again; the file named by LIVESIGNUP_CONFIG this time.
        let fromFlag = try ServerProcess(arguments: ["--policy", "nist"],
                                         environment: ["LIVESIGNUP_POLICY": "classic", "LIVESIGNUP_CONFIG": file])
        defer { fromFlag.removeData() }
        try await fromFlag.start()
        XCTAssertTrue(try page(fromFlag).contains("At least 15 characters"))
        _ = await fromFlag.stop(with: SIGTERM)

        let printed = try ServerProcess.run(["config", "print", "--config", file, "--port", "7000"],
                                            environment: ["LIVESIGNUP_HOST": "0.0.0.0"]).output
        XCTAssertTrue(printed.contains("  source: nist    # \(file):2"), printed)
        XCTAssertTrue(printed.contains("  host: 0.0.0.0    # environment LIVESIGNUP_HOST"), printed)
        XCTAssertTrue(printed.contains("  port: 7000    # flag --port"), printed)
        XCTAssertTrue(printed.contains("  worker_threads: 2    # default"), printed)
    }

    /// The policy may be written in the configuration file itself; its mistakes name the
    /// configuration file's own lines.
    func testThePolicyWrittenInlineRulesTheFormAndItsMistakesNameTheirLines() async throws {
        let file = try write("inline.yaml", """
            server:
              host: 127.0.0.1
            policy:
              rules:
                password:
                  min_length: 21
            """)
        let server = try ServerProcess(arguments: ["--config", file])
        defer { server.removeData() }
        try await server.start()
        XCTAssertTrue(try page(server).contains("At least 21 characters"))
        _ = await server.stop(with: SIGTERM)

        let misspelt = try write("misspelt.yaml", "policy:\n  rules:\n    password:\n      min_lenght: 21\n")
        let check = try ServerProcess.run(["config", "check", misspelt])
        XCTAssertEqual(check.status, 1)
        XCTAssertTrue(check.errors.contains("\(misspelt):4:"), "the configuration file's line: \(check.errors)")
        XCTAssertTrue(check.errors.contains("min_lenght"), check.errors)

        let both = try write("both.yaml", "policy:\n  source: nist\n  rules:\n    password:\n      min_length: 21\n")
        let twice = try ServerProcess.run(["config", "check", both])
        XCTAssertEqual(twice.status, 1)
        XCTAssertTrue(twice.errors.contains("\(both):2: policy.source: give the policy as source or as rules"), twice.errors)
    }

    /// The operator's commands read serve's file for the settings they share: no command
    /// keeps its own list of variables.
    func testTheOperatorsCommandsReadTheSameFile() throws {
        let database = directory.appendingPathComponent("elsewhere.sqlite").path
        let file = try write("shared.yaml", "store:\n  database: \(database)\nserver:\n  port: 9999\n")
        let listed = try ServerProcess.run(["accounts", "list", "--config", file])
        XCTAssertNotEqual(listed.status, 0)
        XCTAssertTrue(listed.errors.contains("No database at '\(database)'"), "the file's database: \(listed.errors)")
        let fromVariable = try ServerProcess.run(["accounts", "list"], environment: ["LIVESIGNUP_CONFIG": file])
        XCTAssertTrue(fromVariable.errors.contains("No database at '\(database)'"), fromVariable.errors)
        let bad = try write("bad-shared.yaml", "store:\n  databse: x\n")
        let refused = try ServerProcess.run(["sessions", "revoke", "--username", "x", "--config", bad])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.errors.contains("\(bad):2: store.databse: unknown setting; did you mean database?"), refused.errors)
    }

    /// A provider's client secret (the policy names the provider) may come from a file the
    /// configuration names by the provider's id; without any secret the start is refused.
    func testAProvidersSecretMayComeFromAFileNamedForItsId() async throws {
        let policy = try write("providers.yaml", """
            providers:
              - id: work
                name: Work
                issuer: https://id.example
                client_id: livesignup
                client_secret_env: LIVESIGNUP_TEST_WORK_SECRET
            """)
        let secret = try write("work-secret", "s3cret-of-work\n")
        let withFile = try write("with.yaml", "policy:\n  source: \(policy)\nproviders:\n  client_secret_files:\n    work: \(secret)\n")
        let server = try ServerProcess(arguments: ["--config", withFile])
        defer { server.removeData() }
        try await server.start()
        XCTAssertTrue(try page(server).contains("Work"), "the provider's button")
        _ = await server.stop(with: SIGTERM)

        let without = try write("without.yaml", "policy:\n  source: \(policy)\n")
        let refused = try ServerProcess.run(["--config", without, "--port", "0",
                                             "--database", directory.appendingPathComponent("p.sqlite").path])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.errors.contains("providers.client_secret_files.work"), refused.errors)
        XCTAssertFalse(try ServerProcess.run(["config", "print", "--config", withFile]).output.contains("s3cret-of-work"))
    }

    func testASecretComesFromAFileAndIsNeverPrinted() async throws {
        let secret = "whsec_" + Data((0..<32).map { UInt8($0) }).base64EncodedString()
        let secretFile = try write("webhook-secret", secret + "\n")
        let file = try write("hooks.yaml", "webhooks:\n  url: http://127.0.0.1:9/hooks\n  secret_file: \(secretFile)\n")
        let printed = try ServerProcess.run(["config", "print", "--config", file]).output
        XCTAssertFalse(printed.contains(secret), "the secret is never printed")
        XCTAssertTrue(printed.contains("  secret: (set, redacted)    # \(file):3"), printed)
        // The server takes it from there (a webhook URL without its secret refuses to start).
        let server = try ServerProcess(arguments: ["--config", file])
        defer { server.removeData() }
        try await server.start()
        _ = await server.stop(with: SIGTERM)
        let withoutSecret = try ServerProcess.run(["--port", "0", "--database", directory.appendingPathComponent("n.sqlite").path,
                                                   "--webhook-url", "http://127.0.0.1:9/hooks"])
        XCTAssertNotEqual(withoutSecret.status, 0, withoutSecret.errors)
        // From the environment's _FILE as well, and the variable itself is named if both are set.
        let viaVariable = try ServerProcess.run(["config", "print"], environment: ["LIVESIGNUP_WEBHOOK_SECRET_FILE": secretFile])
        XCTAssertTrue(viaVariable.output.contains("secret: (set, redacted)    # environment LIVESIGNUP_WEBHOOK_SECRET_FILE"),
                      viaVariable.output)
        XCTAssertFalse(viaVariable.output.contains(secret))
        let both = try ServerProcess.run(["config", "print"], environment: ["LIVESIGNUP_WEBHOOK_SECRET_FILE": secretFile,
                                                                           "LIVESIGNUP_WEBHOOK_SECRET": secret])
        XCTAssertNotEqual(both.status, 0)
        XCTAssertTrue(both.errors.contains("LIVESIGNUP_WEBHOOK_SECRET: set together with LIVESIGNUP_WEBHOOK_SECRET_FILE"),
                      both.errors)
        XCTAssertFalse(both.errors.contains(secret))
    }

    func testABadFileIsRefusedWithEachProblemAtItsLineAndNothingStarts() throws {
        let bad = try write("bad.yaml", """
            server:
              hots: 0.0.0.0
              port: eighty
              heartbeat_seconds: 0
            limits:
              pages_per_address: lots
            webhooks:
              secret: whsec_inline
            sign_in:
              secure_cookies: maybe
            """)
        let expected = [
            "\(bad):2: server.hots: unknown setting; did you mean host?",
            "\(bad):3: server.port: a whole number, not 'eighty'",
            "\(bad):4: server.heartbeat_seconds: 0 is out of bounds: 1 to 3600",
            "\(bad):6: limits.pages_per_address: 'lots' is not a rate",
            "\(bad):8: webhooks.secret: a secret is never written in the file",
            "\(bad):10: sign_in.secure_cookies: true or false, not 'maybe'",
        ]
        let check = try ServerProcess.run(["config", "check", bad])
        XCTAssertEqual(check.status, 1)
        for line in expected { XCTAssertTrue(check.errors.contains(line), "\(line)\nin:\n\(check.errors)") }
        XCTAssertFalse(check.errors.contains("whsec_inline"), "a secret written inline is not repeated")

        let serve = try ServerProcess.run(["--config", bad, "--port", "0",
                                           "--database", directory.appendingPathComponent("x.sqlite").path])
        XCTAssertNotEqual(serve.status, 0)
        for line in expected { XCTAssertTrue(serve.errors.contains(line), "\(line)\nin:\n\(serve.errors)") }
        XCTAssertFalse(serve.output.contains("listening"), serve.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.appendingPathComponent("x.sqlite").path),
                       "nothing started: no database was made")

        let duplicate = try write("twice.yaml", "server:\n  port: 1\n  host: a\n  port: 2\n")
        let twice = try ServerProcess.run(["config", "check", duplicate])
        XCTAssertEqual(twice.status, 1)
        XCTAssertTrue(twice.errors.contains("\(duplicate):2: port: is given more than once"), twice.errors)

        let missing = try ServerProcess.run(["config", "check", directory.appendingPathComponent("none.yaml").path])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.errors.contains("none.yaml: cannot be read"), missing.errors)
    }

    /// The systemd deployment's file is accepted once its credentials exist, each a key as the
    /// unit's comment makes it (64 hex digits), where systemd puts them.
    func testTheSystemdDeploymentsFileIsAcceptedWithItsCredentials() throws {
        let deployed = try String(contentsOf: TestServer.repositoryRoot.appendingPathComponent("deploy/systemd/livesignup.yaml"),
                                  encoding: .utf8)
        let credentials = directory.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        for name in ["form-token-key", "mail-key", "verification-key", "second-factor-key", "provider-cookie-key"] {
            let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            try (hex + "\n").write(to: credentials.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        try "mail password\n".write(to: credentials.appendingPathComponent("smtp-password"), atomically: true, encoding: .utf8)
        let file = try write("deployed.yaml", deployed.replacingOccurrences(of: "/run/credentials/livesignup.service",
                                                                            with: credentials.path))
        let check = try ServerProcess.run(["config", "check", file])
        XCTAssertEqual(check.status, 0, check.errors)
        let printed = try ServerProcess.run(["config", "print", "--config", file]).output
        XCTAssertTrue(printed.contains("  format: json    # \(file):"), printed)
        XCTAssertFalse(printed.contains("mail password"), printed)
    }

    func testTheCommittedReferenceAndExampleAreWhatTheDeclarationsGenerate() throws {
        let root = TestServer.repositoryRoot
        let reference = try String(contentsOf: root.appendingPathComponent("docs/CONFIGURATION.md"), encoding: .utf8)
        XCTAssertEqual(reference, try ServerProcess.run(["config", "reference"]).output,
                       "docs/CONFIGURATION.md is stale: signup-server config reference > docs/CONFIGURATION.md")
        let example = try String(contentsOf: root.appendingPathComponent("docs/examples/livesignup.yaml"), encoding: .utf8)
        XCTAssertEqual(example, try ServerProcess.run(["config", "example"]).output,
                       "docs/examples/livesignup.yaml is stale: signup-server config example > docs/examples/livesignup.yaml")
        let check = try ServerProcess.run(["config", "check", self.example])
        XCTAssertEqual(check.status, 0, check.errors)
        // The README's minimal configuration is one the server takes.
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let minimal = try XCTUnwrap(readme.firstMatch(of: #/```yaml\n(?<file>(?s:.*?))```/#)?.file, "the README shows a file")
        let readmeCheck = try ServerProcess.run(["config", "check", try write("readme.yaml", String(minimal))])
        XCTAssertEqual(readmeCheck.status, 0, readmeCheck.errors)
    }
}
