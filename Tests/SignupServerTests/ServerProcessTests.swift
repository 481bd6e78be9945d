import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveSignupClient
import HTTPTestSupport
import SignupDomain
import SignupSQLite
@testable import SignupServer
import XCTest

/// The executable as an operator runs it.
final class ServerProcessTests: XCTestCase {
    func testPortZeroPicksAFreePortAndSIGTERMEndsStreamsAndExitsCleanly() async throws {
        let server = try ServerProcess()
        defer { server.removeData() }
        try await server.start()
        XCTAssertGreaterThan(server.port, 0)

        let form = try await SignupClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!).openForm()
        let connection = try RawHTTPConnection(port: server.port)
        connection.send("GET /events?token=\(form.token) HTTP/1.0\r\n\r\n")
        XCTAssertTrue(connection.read { $0.contains("event: snapshot") })

        let exited = await server.stop(with: SIGTERM)
        XCTAssertTrue(exited, "SIGTERM stops the server")
        XCTAssertEqual(server.process.terminationReason, .exit)
        XCTAssertEqual(server.process.terminationStatus, 0)
        XCTAssertTrue(connection.readUntilClosed(), "open streams are ended, not cut mid-event")
    }

    func testHeartbeatSecondsSetsHowOftenAStreamIsPinged() async throws {
        let server = try ServerProcess(arguments: ["--heartbeat-seconds", "1"])
        defer { server.removeData() }
        try await server.start()
        let form = try await SignupClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!).openForm()
        let connection = try RawHTTPConnection(port: server.port)
        connection.send("GET /events?token=\(form.token) HTTP/1.0\r\n\r\n")
        XCTAssertTrue(connection.read { $0.contains("event: snapshot") })
        // Two pings within 4 s: at the default 15 s there would be none.
        XCTAssertTrue(connection.read(timeout: 4) { $0.components(separatedBy: ": ping\n\n").count > 2 },
                      "a ping every second")
        _ = await server.stop(with: SIGTERM)

        for value in ["0", "3601"] {
            let (status, _, text) = try ServerProcess.run(["--port", "0", "--heartbeat-seconds", value])
            XCTAssertNotEqual(status, 0)
            XCTAssertTrue(text.contains("--heartbeat-seconds must be between 1 and 3600"), text)
        }
    }

    func testSIGINTAlsoStopsCleanly() async throws {
        let server = try ServerProcess()
        defer { server.removeData() }
        try await server.start()
        let exited = await server.stop(with: SIGINT)
        XCTAssertTrue(exited)
        XCTAssertEqual(server.process.terminationStatus, 0)
    }

    func testPolicyFlagSelectsTheNISTChecklist() async throws {
        let server = try ServerProcess(arguments: ["--policy", "nist"])
        defer { server.removeData() }
        try await server.start()
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(server.port)/")!)
        let html = String(decoding: data, as: UTF8.self)
        XCTAssertTrue(html.contains("At least 15 characters"))
        XCTAssertFalse(html.contains("password.uppercase"))
        _ = await server.stop(with: SIGTERM)
    }

    func testAnUnknownPolicyIsRefusedWithTheChoices() throws {
        let (status, _, text) = try ServerProcess.run(["--policy", "lenient", "--port", "0"])
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(text.contains("Unknown policy 'lenient'. Choose one of: classic, nist."), text)
    }

    func testSeedDemoMarksDemoNamesTaken() async throws {
        let server = try ServerProcess(arguments: ["--seed-demo"])
        defer { server.removeData() }
        try await server.start()
        let form = try await SignupClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!).openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        _ = try await form.edit("username", to: "Alice")
        await events.wait { $0.contains { event in
            if case .requirement(id: "username.available", state: .unmet, _) = event { return true } else { return false }
        } }
    }
}

/// Accounts the server confirmed survive the process being killed outright.
final class DurabilityTests: XCTestCase {
    func testAccountSurvivesKillMinusNineAndCanSignIn() async throws {
        let first = try ServerProcess()
        defer { first.removeData() }
        try await first.start()
        let password = "Durable-Disk-2026"
        let status = try await signUp(on: first, username: "survivor", password: password)
        XCTAssertEqual(status, 303)

        // No chance to flush or close anything.
        let killed = await first.stop(with: SIGKILL)
        XCTAssertTrue(killed)
        XCTAssertEqual(first.process.terminationReason, .uncaughtSignal)

        let second = try ServerProcess(databaseDirectory: first.databaseDirectory)
        defer { second.removeData() }
        try await second.start()
        var signIn = URLRequest(url: URL(string: "http://127.0.0.1:\(second.port)/signin")!)
        signIn.httpMethod = "POST"
        signIn.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        signIn.httpBody = Data(FormURLEncoder.encode([("username", "survivor"), ("password", password)]).utf8)
        let (_, signedIn) = try await TestServer.session.data(for: signIn)
        XCTAssertEqual((signedIn as? HTTPURLResponse)?.statusCode, 303)
        XCTAssertEqual((signedIn as? HTTPURLResponse)?.value(forHTTPHeaderField: "Location"), "/welcome")
    }

    /// Submits a valid sign-up form to a running server; returns the status it answered.
    private func signUp(on server: ServerProcess, username: String, password: String) async throws -> Int? {
        let base = URL(string: "http://127.0.0.1:\(server.port)")!
        let form = try await SignupClient(baseURL: base).openForm()
        var request = URLRequest(url: base.appendingPathComponent("signup"))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(FormURLEncoder.encode([
            ("token", form.token), ("username", username), ("email", "\(username)@example.com"),
            ("password", password), ("confirm", password),
        ]).utf8)
        let (_, response) = try await TestServer.session.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode
    }

    func testAccountsListShowsAccountsWithoutHashes() async throws {
        let server = try ServerProcess(arguments: ["--seed-demo"])
        defer { server.removeData() }
        try await server.start()
        let created = try await signUp(on: server, username: "operator_view", password: "Listed-Not-Leaked-7")
        XCTAssertEqual(created, 303)
        _ = await server.stop(with: SIGTERM)

        let (status, text, _) = try ServerProcess.run(["accounts", "list", "--database", server.databasePath])
        XCTAssertEqual(status, 0)
        XCTAssertTrue(text.contains("alice"))
        XCTAssertTrue(text.contains("operator_view"))
        XCTAssertTrue(text.contains("operator_view@example.com"))
        XCTAssertTrue(text.contains("username"))
        XCTAssertFalse(text.contains("$argon2id$"))
        XCTAssertFalse(text.contains("!  "), "the unusable-hash marker is described, not printed")
    }
}

/// The operator's way to hand a person back their account.
final class OperatorRecoveryTests: XCTestCase {
    /// `accounts recover` prints a one-time link (ASVS: an operator may start a recovery, never
    /// set the password); the running server, sharing the database and its key, honours it once.
    func testAnOperatorsRecoveryLinkLetsTheOwnerChooseANewPassword() async throws {
        let mailDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-mail-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: mailDirectory) }
        let server = try ServerProcess(arguments: ["--mail-dir", mailDirectory.path])
        defer { server.removeData() }
        try await server.start()
        let hash = try Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024).hash("Old-Password-1")
        _ = try SQLiteAccountStore(path: server.databasePath).createAccount(
            NewAccount(username: "Locked_Out", email: "locked@example.org", passwordHash: hash, formToken: "operator-test"))
        let base = "http://127.0.0.1:\(server.port)"

        let unknown = try ServerProcess.run(["accounts", "recover", "--username", "nobody_at_all", "--database", server.databasePath,
                                             "--public-origin", base])
        XCTAssertEqual(unknown.0, 64, "a readable refusal")
        XCTAssertTrue(unknown.2.contains("No account is named 'nobody_at_all'"), unknown.2)

        let (status, output, _) = try ServerProcess.run(["accounts", "recover", "--username", "locked_out",
                                                         "--database", server.databasePath, "--public-origin", base + "/"])
        XCTAssertEqual(status, 0)
        let link = try XCTUnwrap(output.firstMatch(of: #/\/recover\?link=([A-Za-z0-9_-]{43})/#)).1.description
        XCTAssertTrue(output.hasPrefix(base + "/recover?link="), output)
        XCTAssertFalse(output.contains("Old-Password"))

        let url = URL(string: base)!
        let moved = try await TestServer.request(to: url, "GET", "/recover?link=\(link)")
        XCTAssertEqual(moved.status, 303)
        let cookie = "\(RecoveryRoutes.secretCookie)=\(link)"
        let chosen = try await TestServer.request(to: url, "POST", "/recover/password",
                                                  body: FormURLEncoder.encode([("password", "Handed-Over-1963"),
                                                                               ("confirm", "Handed-Over-1963")]),
                                                  headers: ["Cookie": cookie, "Origin": base])
        XCTAssertEqual(chosen.status, 303, chosen.body)
        let again = try await TestServer.request(to: url, "GET", "/recover/password", headers: ["Cookie": cookie])
        XCTAssertEqual(again.status, 410, "once")
        let signIn = try await TestServer.request(to: url, "POST", "/signin",
                                                  body: FormURLEncoder.encode([("username", "locked_out"),
                                                                               ("password", "Handed-Over-1963")]),
                                                  headers: ["Origin": base])
        XCTAssertEqual(signIn.status, 303)
    }
}

/// Issue 43's operator commands, as an operator runs them beside a running server sharing the
/// database: each changes one account, writes an audit line naming it, and queues its webhook.
final class OperatorAccountTests: XCTestCase {
    func testAnOperatorDisablesEnablesRemovesPasskeysAndDeletesAnAccount() async throws {
        let server = try ServerProcess()
        defer { server.removeData() }
        try await server.start()
        let store = try SQLiteAccountStore(path: server.databasePath)
        let hash = try Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024).hash("Operated-On-1999")
        let account = try store.createAccount(NewAccount(username: "Operated", email: "op@example.org", passwordHash: hash,
                                                         formToken: "operated-form"))
        _ = try store.createAccount(NewAccount(username: "Untouched", email: "un@example.org", passwordHash: hash,
                                               formToken: "untouched-form"))
        try store.addPasskey(Passkey(credentialID: [1, 2, 3], accountID: account.id, publicKey: [0xA5], algorithm: -7,
                                     signCount: 0, transports: [], isBackupEligible: false, isBackedUp: false, createdAt: Date()))
        let url = URL(string: "http://127.0.0.1:\(server.port)")!
        func signIn(_ username: String) async throws -> (status: Int, cookie: String?) {
            let answer = try await TestServer.request(to: url, "POST", "/signin",
                                                      body: FormURLEncoder.encode([("username", username),
                                                                                   ("password", "Operated-On-1999")]),
                                                      headers: ["Origin": url.absoluteString])
            return (answer.status, answer.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        }
        let session = try await signIn("operated")
        let control = try await signIn("untouched")
        XCTAssertEqual(session.status, 303)
        let database = ["--database", server.databasePath]

        let disabled = try ServerProcess.run(["accounts", "disable", "--username", "operated"] + database)
        XCTAssertEqual(disabled.0, 0, disabled.2)
        XCTAssertTrue(disabled.1.contains("1 signed-in session ended"), disabled.1)
        XCTAssertTrue(disabled.2.contains("event=account_disabled") && disabled.2.contains("account=\(account.id)"),
                      "an audit line naming the account: \(disabled.2)")
        // Ended in the store the running server reads (it forgets its 5 s memory of them then).
        XCTAssertEqual(try store.signInSessions(ofAccount: account.id, at: Date(), rules: SignInSessionRules(idleTimeout: 3600)).count,
                       0, "the disabled account's sessions ended")
        let refused = try await signIn("operated")
        XCTAssertEqual(refused.status, 403, "sign-in refused")
        let controlAuth = try await TestServer.request(to: url, "GET", "/auth", headers: ["Cookie": control.cookie ?? ""])
        XCTAssertEqual(controlAuth.status, 200, "another account is untouched")
        let listed = try ServerProcess.run(["accounts", "list"] + database)
        XCTAssertTrue(listed.1.contains("no (disabled)"), listed.1)
        let json = try ServerProcess.run(["accounts", "list", "--format", "json"] + database)
        XCTAssertTrue(json.1.contains(#""disabled_at" : ""#), json.1)
        let again = try ServerProcess.run(["accounts", "disable", "--username", "operated"] + database)
        XCTAssertTrue(again.1.contains("was disabled already"), again.1)

        let enabled = try ServerProcess.run(["accounts", "enable", "--username", "operated"] + database)
        XCTAssertEqual(enabled.0, 0, enabled.2)
        let back = try await signIn("operated")
        XCTAssertEqual(back.status, 303)

        let passkeys = try ServerProcess.run(["accounts", "passkeys", "list", "--username", "operated"] + database)
        XCTAssertTrue(passkeys.1.contains("AQID"), passkeys.1)
        let removed = try ServerProcess.run(["accounts", "passkeys", "remove", "--username", "operated", "--id", "AQID"] + database)
        XCTAssertEqual(removed.0, 0, removed.2)
        XCTAssertTrue(removed.2.contains("event=passkey_removed"), removed.2)
        XCTAssertEqual(try store.passkeys(ofAccount: account.id).count, 0)

        // A second factor reset: gone, announced, audited; a second reset says there is none.
        XCTAssertTrue(try store.startSecondFactorSetup(ofAccount: account.id, sealedSecret: [1], at: Date()))
        XCTAssertTrue(try store.enableSecondFactor(ofAccount: account.id, step: 1, recoveryCodeHashes: ["h"], at: Date(), events: []))
        let reset = try ServerProcess.run(["accounts", "second-factor", "reset", "--username", "operated"] + database)
        XCTAssertEqual(reset.0, 0, reset.2)
        XCTAssertTrue(reset.2.contains("event=second_factor_reset"), reset.2)
        XCTAssertNil(try store.secondFactor(ofAccount: account.id))
        let none = try ServerProcess.run(["accounts", "second-factor", "reset", "--username", "operated"] + database)
        XCTAssertTrue(none.1.contains("has no second factor"), none.1)

        let unsure = try ServerProcess.run(["accounts", "delete", "--username", "operated"] + database)
        XCTAssertNotEqual(unsure.0, 0)
        XCTAssertTrue(unsure.2.contains("add --yes"), unsure.2)
        let deleted = try ServerProcess.run(["accounts", "delete", "--username", "operated", "--yes"] + database)
        XCTAssertEqual(deleted.0, 0, deleted.2)
        XCTAssertNil(try store.account(named: "operated"))
        XCTAssertTrue(try store.isUsernameTaken("Operated", at: Date()), "the name stays reserved")
        XCTAssertNotNil(try store.account(named: "untouched"))
        // Each change queued its webhook, for a server started with --webhook-url.
        let queued = try store.claimDueEvents(channel: .webhook, at: Date().addingTimeInterval(60), limit: 10, lease: 1)
            .map(\.event.type).sorted()
        XCTAssertEqual(queued, ["account.deleted", "account.disabled", "account.enabled", "account.passkey_removed",
                                "account.second_factor_removed"])
    }
}
