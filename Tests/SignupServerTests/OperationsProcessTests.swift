import Foundation
import HTTPTestSupport
import XCTest

/// The executable as an operator runs it: probes, metrics, logs, configuration, start-up
/// from anywhere.
final class OperationsProcessTests: XCTestCase {
    private func get(_ port: UInt16, _ path: String, from address: String = "127.0.0.1",
                     headers: [String: String] = [:]) throws -> RawExchange {
        try RawExchange.send(port: port, from: address, "GET", path, headers: headers)
    }

    private func metric(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    func testHealthProbesCreateNoSessionAndReadinessFollowsTheStore() async throws {
        let server = try ServerProcess()
        defer { server.removeData() }
        try await server.start()
        for _ in 0..<20 {
            let health = try get(server.port, "/healthz")
            XCTAssertEqual(health.status, 200)
            XCTAssertEqual(health.body, #"{"status":"ok"}"#)
        }
        XCTAssertEqual(try get(server.port, "/readyz").status, 200)
        let metrics = try get(server.port, "/metrics").body
        XCTAssertEqual(metric("livesignup_form_sessions", in: metrics), 0, "probes hold no session")

        // The database goes away: not ready, with the reason; back: ready again.
        let backup = server.databaseDirectory.appendingPathExtension("backup")
        try FileManager.default.moveItem(at: server.databaseDirectory, to: backup)
        let notReady = try get(server.port, "/readyz")
        XCTAssertEqual(notReady.status, 503)
        XCTAssertTrue(notReady.body.contains(#""reason":"account_store""#), notReady.body)
        XCTAssertEqual(try get(server.port, "/healthz").status, 200, "alive all the same")
        try FileManager.default.moveItem(at: backup, to: server.databaseDirectory)
        let ready = try get(server.port, "/readyz")
        XCTAssertEqual(ready.status, 200)
        _ = await server.stop(with: SIGTERM)
    }

    func testReadinessIs503WhileShuttingDown() async throws {
        let server = try ServerProcess(arguments: ["--shutdown-grace", "5", "--hashes-per-address", "100",
                                                   "--signups-per-address", "off", "--pages-per-address", "off"])
        defer { server.removeData() }
        try await server.start()
        let port = server.port
        // Sign-ups in flight hold the shutdown open for a moment.
        var posts: [RawHTTPConnection] = []
        for index in 0..<12 {
            let token = try XCTUnwrap(get(port, "/").body.firstMatch(of: #/name="token" value="([a-z0-9-]+\.[0-9a-f]{56})"/#)?.1)
            let body = "token=\(token)&username=waiting\(index)&email=w\(index)%40example.com&password=Correct-Horse-9&confirm=Correct-Horse-9"
            let connection = try RawHTTPConnection(port: port, timeoutSeconds: 20)
            connection.send("POST /signup HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            posts.append(connection)
        }
        // A keep-alive connection opened before the signal (new ones are refused after it).
        let probe = try RawHTTPConnection(port: port, timeoutSeconds: 10)
        probe.send("GET /readyz HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertTrue(probe.read { $0.contains("\"status\":\"ok\"") })
        kill(server.process.processIdentifier, SIGTERM)
        // Shutdown has begun once the listening socket refuses new connections.
        let quiesced = await Condition.wait(timeout: 5) { (try? RawHTTPConnection(port: port)) == nil }
        XCTAssertTrue(quiesced, "the server stopped accepting connections")
        let before = probe.received.count
        probe.send("GET /readyz HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertTrue(probe.read { $0.count > before && $0.dropFirst(before).contains("\r\n\r\n{") })
        let answer = String(probe.received.dropFirst(before))
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 503"), answer)
        XCTAssertTrue(answer.contains(#""reason":"shutting_down""#), answer)
        let exited = await server.stop(with: SIGTERM)
        XCTAssertTrue(exited)
    }

    func testMetricsCountEditsSignupsAndLimitsAndAreRefusedToOthers() async throws {
        let server = try ServerProcess(arguments: ["--edits-per-session", "1/min,burst=2",
                                                   "--trusted-proxy", "127.0.0.1", "--metrics-allow", "198.51.100.0/24"])
        defer { server.removeData() }
        try await server.start()
        let port = server.port
        let token = try XCTUnwrap(get(port, "/").body.firstMatch(of: #/name="token" value="([a-z0-9-]+\.[0-9a-f]{56})"/#)?.1)
        var statuses: [Int] = []
        for seq in 1...3 {
            statuses.append(try RawExchange.send(port: port, "POST", "/fields",
                                                 body: "token=\(token)&field=email&value=a\(seq)%40example.com&seq=\(seq)").status)
        }
        XCTAssertEqual(statuses, [202, 202, 429])
        let signup = try RawExchange.send(port: port, "POST", "/signup", body:
            "token=\(token)&username=counted&email=c%40example.com&password=Correct-Horse-9&confirm=Correct-Horse-9")
        XCTAssertEqual(signup.status, 303)

        let scrape = try get(port, "/metrics")
        XCTAssertEqual(scrape.status, 200)
        XCTAssertTrue(scrape.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        XCTAssertEqual(metric("livesignup_edits_total", in: scrape.body), 2)
        XCTAssertEqual(metric(#"livesignup_signups_total{result="created"}"#, in: scrape.body), 1)
        XCTAssertEqual(metric(#"livesignup_rate_limited_total{limit="edits"}"#, in: scrape.body), 1)
        XCTAssertEqual(metric(#"livesignup_password_hash_duration_seconds_count"#, in: scrape.body), 1)
        XCTAssertTrue(scrape.body.contains(#"livesignup_http_request_duration_seconds_count{route="/fields",status="202"} 2"#))
        for name in ["livesignup_form_sessions", "livesignup_event_streams", "livesignup_events_sent_total",
                     "livesignup_availability_checks_total"] {
            XCTAssertNotNil(metric(name, in: scrape.body), name)
        }
        // Through the (trusted) proxy from an address not allowed: as if nothing were there.
        let outsider = try get(port, "/metrics", headers: ["X-Forwarded-For": "203.0.113.7"])
        XCTAssertEqual(outsider.status, 404)
        XCTAssertFalse(outsider.body.contains("livesignup_"))
        XCTAssertEqual(try get(port, "/metrics", headers: ["X-Forwarded-For": "198.51.100.7"]).status, 200, "--metrics-allow")
        _ = await server.stop(with: SIGTERM)
    }

    func testAccessLogHasOneLinePerRequestAndNoSecrets() async throws {
        let server = try ServerProcess(logLevel: "info")
        defer { server.removeData() }
        try await server.start()
        let port = server.port
        let token = String(try XCTUnwrap(get(port, "/").body.firstMatch(of: #/name="token" value="([a-z0-9-]+\.[0-9a-f]{56})"/#)?.1))
        let password = "Sekrit-Horse-Battery-93"
        _ = try RawExchange.send(port: port, "POST", "/fields", body: "token=\(token)&field=password&value=\(password)&seq=1")
        let signup = try RawExchange.send(port: port, "POST", "/signup", body:
            "token=\(token)&username=logged&email=l%40example.com&password=\(password)&confirm=\(password)")
        XCTAssertEqual(signup.status, 303)
        _ = await server.stop(with: SIGTERM)

        let access = server.log.split(separator: "\n").filter { $0.contains("livesignup.access") }
        XCTAssertEqual(access.count, 3, server.log)
        // Every line in swift-log's text format, keys sorted, as log parsers read it (the
        // text format writes access lines without a logger: same bytes).
        for line in access {
            XCTAssertNotNil(line.wholeMatch(of: #/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} info livesignup\.access: client=127\.0\.0\.1 duration_ms=\d+\.\d\d method=(GET|POST) route=/\S* status=\d{3}( token=[A-Za-z0-9]{6})? \[SignupServer\] request/#), String(line))
        }
        let signupLine = try XCTUnwrap(access.first { $0.contains("route=/signup") })
        // The instance id before the dot is the same on every line, so the log shows what follows.
        let signed = try XCTUnwrap(token.split(separator: ".").last)
        for field in ["method=POST", "status=303", "duration_ms=", "client=127.0.0.1", "token=\(signed.prefix(6))"] {
            XCTAssertTrue(signupLine.contains(field), "\(field) in \(signupLine)")
        }
        XCTAssertFalse(server.log.contains(password), "no password in the log")
        XCTAssertFalse(server.log.contains(signed.prefix(7)), "never more than 6 characters of a token")
        XCTAssertFalse(server.log.contains("$argon2id$"), "no hash in the log")
    }

    /// Access lines are written in batches by a thread of their own: while the server runs
    /// they still arrive within moments, whole and in the order of the requests.
    func testAccessLinesArriveInOrderWhileTheServerRuns() async throws {
        let server = try ServerProcess(logLevel: "info")
        defer { server.removeData() }
        try await server.start()
        let paths = ["/healthz", "/readyz", "/nowhere", "/healthz"]
        for path in paths { _ = try get(server.port, path) }
        let log = server.logReader
        let arrived = await Condition.wait(timeout: 5) {
            log().split(separator: "\n").filter { $0.contains("livesignup.access") }.count == paths.count
        }
        XCTAssertTrue(arrived, "written while the server runs: \(server.log)")
        let routes = server.log.split(separator: "\n").filter { $0.contains("livesignup.access") }
            .compactMap { $0.firstMatch(of: #/route=(\S+)/#).map { String($0.1) } }
        XCTAssertEqual(routes, ["/healthz", "/readyz", "other", "/healthz"], "whole lines, in order")
        _ = await server.stop(with: SIGTERM)
    }

    func testJSONLogsAreOneObjectPerLine() async throws {
        let server = try ServerProcess(arguments: ["--log-format", "json"], logLevel: "info")
        defer { server.removeData() }
        try await server.start()
        _ = try get(server.port, "/healthz")
        _ = await server.stop(with: SIGTERM)
        let lines = server.log.split(separator: "\n")
        XCTAssertGreaterThanOrEqual(lines.count, 3)
        for line in lines {
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], String(line))
            XCTAssertNotNil(object["timestamp"])
            XCTAssertNotNil(object["level"])
            XCTAssertNotNil(object["message"])
        }
        XCTAssertTrue(lines.contains { $0.contains(#""route":"/healthz""#) })
    }

    func testAPortInUseIsReportedInLibmicrohttpdsWordsAndExitsNonZero() async throws {
        let first = try ServerProcess()
        defer { first.removeData() }
        try await first.start()
        let (status, _, text) = try ServerProcess.run(
            ["--port", String(first.port), "--database", first.databaseDirectory.appendingPathComponent("second.sqlite").path])
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(text.contains("libmicrohttpd:") && text.lowercased().contains("in use"), text)
        XCTAssertTrue(text.contains("Could not start"), text)
        _ = await first.stop(with: SIGTERM)
    }

    func testEnvironmentSetsOptionsAndFlagsWin() async throws {
        // The port from the environment (0: any free one), the policy from the environment…
        let fromEnvironment = try ServerProcess(environment: ["LIVESIGNUP_PORT": "0", "LIVESIGNUP_POLICY": "nist"],
                                                passPort: false)
        defer { fromEnvironment.removeData() }
        try await fromEnvironment.start()
        XCTAssertGreaterThan(fromEnvironment.port, 0)
        XCTAssertTrue(try get(fromEnvironment.port, "/").body.contains("At least 15 characters"))
        _ = await fromEnvironment.stop(with: SIGTERM)

        // …and a flag wins over the environment.
        let flagWins = try ServerProcess(arguments: ["--policy", "classic"],
                                         environment: ["LIVESIGNUP_POLICY": "nist", "LIVESIGNUP_PORT": "1"])
        defer { flagWins.removeData() }
        try await flagWins.start()
        XCTAssertTrue(try get(flagWins.port, "/").body.contains("At least 8 characters"))
        _ = await flagWins.stop(with: SIGTERM)
    }

    func testAnInvalidEnvironmentValueIsRefusedLikeAFlag() throws {
        let (status, _, text) = try ServerProcess.run(["--port", "0"], environment: ["LIVESIGNUP_IDLE_TIMEOUT": "-3"])
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(text.contains("LIVESIGNUP_IDLE_TIMEOUT: "), "the variable is named: \(text)")
        XCTAssertTrue(text.contains("not started"), text)
    }

    /// Every option of `serve --help` is a declared setting and every declared setting that is
    /// not a secret is an option (issue 55: `ServeSettings` declares each once; the options
    /// bind them), and each names its variable.
    func testEveryServeOptionIsADeclaredSettingAndNamesItsVariable() throws {
        let help = try ServerProcess.run(["serve", "--help"]).output
        let options = Set(help.matches(of: #/^\s+--([a-z0-9-]+)/#.anchorsMatchLineEndings()).map { String($0.1) })
            .subtracting(["help", "version"])
        let reference = try ServerProcess.run(["config", "reference"]).output
        let declared = Set(reference.matches(of: #/\| `--([a-z0-9-]+)` \|/#).map { String($0.1) })
        XCTAssertGreaterThan(declared.count, 80)
        XCTAssertEqual(options.subtracting(declared), [], "options of serve that no setting declares")
        XCTAssertEqual(declared.subtracting(options), [], "declared settings that serve has no option for")
        let flattened = help.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
        for option in options {
            let variable = "LIVESIGNUP_" + option.uppercased().replacingOccurrences(of: "-", with: "_")
            XCTAssertTrue(flattened.contains("[env: \(variable)]"), "--\(option) names \(variable)")
        }
    }

    /// An option's default is its declaration's (`serve --experimental-dump-help` against the
    /// generated reference), so `--help`, `config print` and the file's example agree; only a
    /// default the machine decides (open files, cores) is undeclared, and a flag's false is
    /// its absence.
    func testEveryServeOptionsDefaultIsItsDeclarations() throws {
        let dump = try ServerProcess.run(["serve", "--experimental-dump-help"]).output
        let tool = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(dump.utf8)) as? [String: Any])
        let arguments = try XCTUnwrap((tool["command"] as? [String: Any])?["arguments"] as? [[String: Any]])
        var options: [String: String?] = [:]
        for argument in arguments {
            guard let name = (argument["preferredName"] as? [String: String])?["name"],
                  (argument["preferredName"] as? [String: String])?["kind"] == "long" else { continue }
            options[name] = argument["defaultValue"] as? String
        }
        let reference = try ServerProcess.run(["config", "reference"]).output
        var declared: [String: String?] = [:]
        for row in reference.split(separator: "\n") where row.hasPrefix("| `") && row.contains("| `--") {
            let columns = row.components(separatedBy: " | ")
            let flag = columns[1].trimmingCharacters(in: CharacterSet(charactersIn: "`-"))
            declared[flag] = columns[4] == "(unset)" ? nil : columns[4].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
        }
        XCTAssertGreaterThan(declared.count, 80)
        let decidedByTheMachine: Set = ["max-connections", "max-concurrent-hashes"]
        for (flag, declaredDefault) in declared where !decidedByTheMachine.contains(flag) {
            let optionDefault = options[flag] ?? nil
            switch (optionDefault, declaredDefault) {
            case (nil, "false"?): continue
            case (let option?, let declared?) where Double(option) != nil && Double(option) == Double(declared): continue
            default: XCTAssertEqual(optionDefault, declaredDefault, "--\(flag)'s default")
            }
        }
    }

    func testVersionAndStartingFromTheRootDirectory() async throws {
        let text = try ServerProcess.run(["--version"]).output
        XCTAssertTrue(text.trimmingCharacters(in: .whitespacesAndNewlines).firstMatch(of: #/^\d+\.\d+\.\d+$/#) != nil, text)

        let server = try ServerProcess(workingDirectory: URL(fileURLWithPath: "/"))
        defer { server.removeData() }
        try await server.start()
        let page = try get(server.port, "/")
        XCTAssertEqual(page.status, 200)
        let script = try XCTUnwrap(page.body.firstMatch(of: #/src="(/static/app\.js\?v=[0-9a-f]+)"/#)?.1)
        XCTAssertEqual(try get(server.port, String(script)).status, 200)
        _ = await server.stop(with: SIGTERM)
    }
}
