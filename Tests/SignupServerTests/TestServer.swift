import WebKernel
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveSignupClient
import Logging
import MicroHTTPD
import SignupDomain
import SignupSQLite
import SignupServer
import XCTest

/// A real LiveSignup server on an ephemeral loopback port with a fresh database, for tests
/// that speak HTTP to it like any other client.
final class TestServer {
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Names the database holds from the start, so they show as taken.
    static let takenUsernames = ["alice", "bob"]

    let app: SignupApplication
    let store: SQLiteAccountStore
    let databaseDirectory: URL
    let baseURL: URL
    let client: SignupClient

    /// - Parameter logger: where the server logs; by default warnings and worse only.
    init(logger: Logger? = nil,
         configure: (inout SignupApplication.Configuration) -> Void = { _ in }) throws {
        databaseDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("livesignup-tests-\(UUID().uuidString)")
        store = try SQLiteAccountStore(path: databaseDirectory.appendingPathComponent("test.sqlite").path)
        try store.reserveUsernames(Self.takenUsernames)
        var configuration = SignupApplication.Configuration.forTests()
        // Real time passes in these tests: keep the availability debounce short.
        configuration.availabilityDebounce = .milliseconds(20)
        configure(&configuration)
        let logger = logger ?? {
            var quiet = Logger(label: "livesignup-test")
            quiet.logLevel = .warning
            return quiet
        }()
        app = try SignupApplication(configuration: configuration, store: store, logger: logger)
        try app.start()
        baseURL = URL(string: "http://127.0.0.1:\(app.port)")!
        client = SignupClient(baseURL: baseURL)
    }

    /// Follows no redirects and keeps no cookies, so tests see every 303 and send cookies
    /// themselves.
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        return URLSession(configuration: configuration, delegate: RedirectRefuser(), delegateQueue: nil)
    }()

    func stop() {
        app.stop()
        try? FileManager.default.removeItem(at: databaseDirectory)
    }

    /// How `request` reaches the app.
    enum Transport {
        /// Handed to `SignupApplication.respond(to:)`: routing, limits, metrics and handlers
        /// exactly as for a served request, without a socket (as Hummingbird's in-process
        /// tests). The default: a route's answer is what most tests check.
        case inProcess
        /// Over a loopback socket through libmicrohttpd, for what only the HTTP layer does:
        /// its body and header limits, its own headers, the peer's address, streams.
        case socket
    }

    /// A raw request, for checking statuses, headers and bodies exactly; in process unless
    /// the test is about the HTTP layer. Headers come back lowercased, repeated ones joined
    /// with ", " (as URLSession joins them).
    func request(
        _ method: String, _ path: String, body: String? = nil,
        contentType: String? = "application/x-www-form-urlencoded",
        headers: [String: String] = [:], over transport: Transport = .inProcess, from address: String = "127.0.0.1"
    ) async throws -> (status: Int, headers: [String: String], body: String) {
        guard transport == .inProcess else {
            return try await Self.request(to: baseURL, method, path, body: body, contentType: contentType, headers: headers)
        }
        let parts = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let query = try parts.count > 1 ? URLEncodedForm(decoding: Array(parts[1].utf8)).fields : []
        var sent = HTTPHeaders(headers.map { ($0.key, $0.value) })
        // What every client sends and the site's origin is judged by.
        if sent["Host"] == nil { sent.set("Host", "127.0.0.1:\(app.port)") }
        var bytes: [UInt8] = []
        if let body {
            bytes = Array(body.utf8)
            if let contentType { sent.set("Content-Type", contentType) }
            sent.set("Content-Length", String(bytes.count))
        }
        let rawPath = String(parts[0])
        let response = await app.respond(to: HTTPRequest(
            method: method, path: rawPath.removingPercentEncoding ?? rawPath, rawPath: rawPath, query: query,
            headers: sent, body: bytes, remoteAddress: address))
        var answered: [String: String] = [:]
        for (name, value) in response.headers {
            answered[name.lowercased(), default: ""] += (answered[name.lowercased()] == nil ? "" : ", ") + value
        }
        guard method != "HEAD", case .bytes(let content) = response.body else {
            // HEAD has no body, and a stream's body is the stream (its tests read it as a client).
            return (response.status.code, answered, "")
        }
        return (response.status.code, answered, String(decoding: content, as: UTF8.self))
    }

    /// The same, without the server object, for requests sent from several tasks at once.
    /// A POST as a page of `site` sends it from its script: its `Origin`, JSON answers asked
    /// for, and `cookie` when given.
    func postFromScript(of site: String, _ path: String, _ fields: [(String, String)], cookie: String? = nil) async throws
        -> (status: Int, headers: [String: String], body: String) {
        var headers = ["Origin": site, "Accept": "application/json"]
        if let cookie { headers["Cookie"] = cookie }
        return try await request("POST", path, body: FormURLEncoder.encode(fields), headers: headers)
    }

    static func request(
        to baseURL: URL, _ method: String, _ path: String, body: String? = nil,
        contentType: String? = "application/x-www-form-urlencoded",
        headers: [String: String] = [:]
    ) async throws -> (status: Int, headers: [String: String], body: String) {
        var request = URLRequest(url: URL(string: path, relativeTo: baseURL)!)
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body.utf8)
            if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await Self.session.data(for: request)
        let http = try XCTUnwrap(response as? HTTPURLResponse)
        var headerFields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            headerFields[String(describing: name).lowercased()] = String(describing: value)
        }
        return (http.statusCode, headerFields, String(decoding: data, as: UTF8.self))
    }
}

/// Makes URLSession hand back a redirect instead of following it.
private final class RedirectRefuser: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}

extension SignupApplication.Configuration {
    /// What every test's app starts from: any free port, the repository's Public and
    /// Templates, and real argon2id at its cheapest (tests check behaviour, not hash cost).
    static func forTests() -> Self {
        var configuration = Self()
        configuration.port = 0
        configuration.publicDirectory = TestServer.repositoryRoot.appendingPathComponent("Public")
        configuration.templatesDirectory = TestServer.repositoryRoot.appendingPathComponent("Templates")
        configuration.passwordHasher = Argon2idPasswordHasher(opsLimit: 1, memLimitBytes: 8 * 1024 * 1024)
        return configuration
    }

    /// Proofs of work on at a price a test pays in milliseconds, without the haste rule; no
    /// limits but the budget for posts without a proof: one an hour, so its second use is over it.
    mutating func askCheapProofs() {
        var settings = ProofOfWorkSettings()
        settings.baseCost = 500
        settings.plausibleSeconds = 0
        proofOfWork = settings
        limits = .none
        limits.noJavaScriptSignups = Rate(burst: 1, perSecond: 1.0 / 3600)
    }
}
