import Foundation
import HTTPTestSupport
import LiveSignupClient
import MicroHTTPD
import XCTest

/// The shipped nginx configuration (deploy/nginx) in front of a real server on loopback:
/// the page, a live form's events (unbuffered) and a sign-up, all through the proxy.
final class NginxProxyTests: XCTestCase {
    static let nginx = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    private var directory: URL!
    private var nginxProcess: Process?

    override func setUpWithError() throws {
        guard Self.nginx != nil else {
            throw Prerequisite.missing("nginx is not installed (make test installs Debian's nginx-light): the proxy test needs it")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let nginxProcess, nginxProcess.isRunning {
            // SIGKILL: a process started from a Dispatch thread inherits its blocked signals,
            // so nginx never sees SIGTERM.
            kill(nginxProcess.processIdentifier, SIGKILL)
            nginxProcess.waitUntilExit()
        }
        // nil when setUp stopped for a missing prerequisite (tearDown runs all the same).
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    static let proxyConf = TestServer.repositoryRoot.appendingPathComponent("deploy/nginx/livesignup-proxy.conf")
    private static let siteConf = TestServer.repositoryRoot.appendingPathComponent("deploy/nginx/livesignup.conf")

    /// A main configuration that runs nginx unprivileged in the test's folder, in the
    /// foreground, and includes `body` in its http block.
    static func mainConfiguration(in directory: URL, _ body: String) -> String {
        let temp = directory.path
        return """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(temp)/nginx.pid;
        error_log \(temp)/error.log warn;
        events { worker_connections 256; }
        http {
            access_log off;
            client_body_temp_path \(temp)/body;
            proxy_temp_path \(temp)/proxy;
            fastcgi_temp_path \(temp)/fastcgi;
            uwsgi_temp_path \(temp)/uwsgi;
            scgi_temp_path \(temp)/scgi;
        \(body)
        }
        """
    }

    static func freePort() throws -> UInt16 {
        // Port 0 picks one; nginx gets it a moment later (a small race, fine on loopback).
        let probe = HTTPServer(configuration: HTTPServerConfiguration(port: 0), responder: Nothing())
        try probe.start()
        let port = probe.port
        probe.stop()
        return port
    }

    /// nginx in the foreground with `configuration`, its files in `directory`; the caller
    /// kills it with SIGKILL (started from a Dispatch thread, it never sees SIGTERM).
    static func launchNginx(in directory: URL, configuration: URL) throws -> Process {
        let nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: Self.nginx!)
        nginx.arguments = ["-p", directory.path, "-c", configuration.path]
        // Never the test process's own output: if the test process dies, an nginx holding it
        // would keep `swift test` waiting for the end of that output forever.
        nginx.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        nginx.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        nginx.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try ProcessLauncher.shared.run(nginx)
        return nginx
    }

    private struct Nothing: HTTPResponder {
        func respond(to request: HTTPRequest) -> HTTPResponse { .text("") }
    }

    func testALiveSignUpThroughTheShippedProxyConfiguration() async throws {
        let server = try TestServer {
            $0.trustedProxies = [IPAddressRange("127.0.0.1")!]
            $0.connectionsPerAddress = 0
        }
        defer { server.stop() }
        let proxyPort = try Self.freePort()
        let configuration = directory.appendingPathComponent("nginx.conf")
        try Self.mainConfiguration(in: directory, """
            upstream livesignup { server 127.0.0.1:\(server.app.port); keepalive 8; }
            map $arg_token $livesignup_upstream { default livesignup; }
            server {
                listen 127.0.0.1:\(proxyPort);
                include \(Self.proxyConf.path);
            }
        """).write(to: configuration, atomically: true, encoding: .utf8)
        nginxProcess = try Self.launchNginx(in: directory, configuration: configuration)

        let proxied = URL(string: "http://127.0.0.1:\(proxyPort)")!
        let ready = await Condition.wait(timeout: 10) {
            (try? RawExchange.send(port: proxyPort, "GET", "/healthz").status) == 200
        }
        XCTAssertTrue(ready, "nginx answers: \((try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? "")")

        // Metrics stay private through the public site.
        XCTAssertEqual(try RawExchange.send(port: proxyPort, "GET", "/metrics").status, 404)

        let direct = try await latencies(through: server.baseURL)
        let viaProxy = try await latencies(through: proxied)
        print("edit → event median: direct \(direct) ms, through nginx \(viaProxy) ms")

        // The plain form post through the proxy creates the account.
        let form = try await SignupClient(baseURL: proxied).openForm()
        let body = FormURLEncoder.encode([("token", form.token), ("username", "proxied"), ("email", "p@example.com"),
                                          ("password", "Correct-Horse-9"), ("confirm", "Correct-Horse-9")])
        let answer = try await TestServer.request(to: proxied, "POST", "/signup", body: body)
        XCTAssertEqual(answer.status, 303, answer.body)
        XCTAssertEqual(try server.store.account(named: "proxied")?.username, "proxied")

        // A browser's edit carries its page's origin, port included. nginx must pass on the
        // Host the browser sent (not `$host`, which drops the port), or the server takes its
        // own page for another site and refuses every edit with 403.
        let live = try await SignupClient(baseURL: proxied).openForm()
        let edit = FormURLEncoder.encode([("token", live.token), ("field", "email"), ("value", "a@example.com"), ("seq", "1")])
        let sameSite = try RawExchange.send(port: proxyPort, "POST", "/fields?token=\(live.token)", body: edit,
                                            headers: ["Origin": "http://127.0.0.1:\(proxyPort)"])
        XCTAssertEqual(sameSite.status, 202, sameSite.body)
        let otherSite = try RawExchange.send(port: proxyPort, "POST", "/fields?token=\(live.token)", body: edit,
                                             headers: ["Origin": "http://127.0.0.1:\(server.app.port)"])
        XCTAssertEqual(otherSite.status, 403, otherSite.body)
        XCTAssertTrue(otherSite.body.contains("cross_site_request"), otherSite.body)
        // A client's own X-Forwarded-Host must not reach the server as the proxy's word: it
        // would make "this site" whatever the client names (issue 40, item 3).
        let named = try RawExchange.send(port: proxyPort, "POST", "/fields?token=\(live.token)", body: edit,
                                         headers: ["Origin": "http://evil.example", "X-Forwarded-Host": "evil.example"])
        XCTAssertEqual(named.status, 403, named.body)
    }

    /// Median milliseconds from an edit to its event, for a live form opened at `baseURL`.
    /// Each event must arrive within the collector's bounded wait: a buffering proxy would
    /// hold them back until its buffer filled, and the wait would fail.
    private func latencies(through baseURL: URL) async throws -> Double {
        let form = try await SignupClient(baseURL: baseURL).openForm()
        let events = EventCollector(form.events())
        await events.wait(forCount: 1)
        var samples: [Double] = []
        for index in 1...10 {
            // Alternately valid and not, so every edit flips `email.format` and sends an event.
            let value = index.isMultiple(of: 2) ? "invalid\(index)" : "valid\(index)@example.com"
            let started = Date()
            let receipt = try await form.edit("email", to: value)
            await events.wait { events in
                events.contains { event in
                    if case .requirement(let id, _, let rev) = event { return id == "email.format" && rev == receipt.rev }
                    return false
                }
            }
            samples.append(Date().timeIntervalSince(started) * 1000)
        }
        events.stop()
        return samples.sorted()[samples.count / 2]
    }

    func testTheTLSSiteFilePassesNginxsOwnCheck() throws {
        let certificate = directory.appendingPathComponent("cert.pem")
        let key = directory.appendingPathComponent("key.pem")
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                             "-keyout", key.path, "-out", certificate.path]
        openssl.standardError = FileHandle(forWritingAtPath: "/dev/null")
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else { throw Prerequisite.missing("openssl is not installed (make test installs Debian's openssl): the TLS site's check needs a certificate") }
        try openssl.run()
        openssl.waitUntilExit()
        XCTAssertEqual(openssl.terminationStatus, 0)

        // The shipped site, with only the certificate paths and the snippet's location changed.
        let site = try String(contentsOf: Self.siteConf, encoding: .utf8)
            .replacingOccurrences(of: "/etc/letsencrypt/live/signup.example.com/fullchain.pem", with: certificate.path)
            .replacingOccurrences(of: "/etc/letsencrypt/live/signup.example.com/privkey.pem", with: key.path)
            .replacingOccurrences(of: "include snippets/livesignup-proxy.conf;", with: "include \(Self.proxyConf.path);")
        let configuration = directory.appendingPathComponent("site-check.conf")
        try Self.mainConfiguration(in: directory, site).write(to: configuration, atomically: true, encoding: .utf8)
        let check = Process()
        check.executableURL = URL(fileURLWithPath: Self.nginx!)
        check.arguments = ["-t", "-p", directory.path, "-c", configuration.path]
        let output = Pipe()
        check.standardError = output
        try check.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        check.waitUntilExit()
        XCTAssertEqual(check.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("syntax is ok"), text)
    }
}
