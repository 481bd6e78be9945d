import ArgumentParser
import Foundation
import MicroHTTPD
import SignupServer

/// The flags for everything that keeps one client from locking others out. Defaults come
/// from `SignupLimits` and `SignupApplication.Configuration`; the README lists them all.
struct LimitOptions: ParsableArguments {
    private static let defaults = SignupApplication.Configuration()

    @Option(help: help("trusted-proxy", "A reverse proxy (address or CIDR) whose X-Forwarded-For/-Proto/-Host are believed; repeatable."))
    var trustedProxy: [String] = []

    @Option(help: help("public-origin", "An origin the site is served under (e.g. https://signup.example.com), for the cross-site check; repeatable."))
    var publicOrigin: [String] = []

    @Option(help: help("max-connections", "Open connections at most, event streams included; by default the process's open-file limit less 100 (for the database and logs)."))
    var maxConnections = LimitOptions.openFileLimit.map { max(64, $0 - 100) } ?? defaults.connectionLimit

    @Option(help: help("connections-per-address", "Connections one client address may hold (0 = no limit; behind a proxy set 0)."))
    var connectionsPerAddress = defaults.connectionsPerAddress

    @Option(help: help("idle-timeout", "Seconds a connection may sit idle, also between the bytes of a slow request."))
    var idleTimeout = defaults.idleTimeoutSeconds

    @Option(help: help("connection-memory-kib", "KiB of memory each connection has for request and response headers; bigger headers are answered 431."))
    var connectionMemoryKib = defaults.connectionMemoryBytes / 1024

    @Option(help: help("max-sessions", "Form sessions held at once; when full the longest-idle ones without a stream go."))
    var maxSessions = defaults.maximumSessions

    @Option(help: help("session-idle-minutes", "Minutes an unused form session without a stream is kept."))
    var sessionIdleMinutes = Int(defaults.sessionIdleLifetime / 60)

    @Option(help: help("shutdown-grace", "Seconds SIGTERM waits for sign-ups already hashing before answering them 503."))
    var shutdownGrace = Int(defaults.shutdownGrace)

    @Option(help: help("pages-per-address", "Sign-up pages and fresh tokens per address."))
    var pagesPerAddress = defaults.limits.pagesPerAddress.description

    @Option(help: help("sessions-per-address", "Form sessions started per address."))
    var sessionsPerAddress = defaults.limits.newSessionsPerAddress.description

    @Option(help: help("live-sessions-per-address", "Form sessions alive at once per address."))
    var liveSessionsPerAddress = defaults.limits.liveSessionsPerAddress

    @Option(help: help("edits-per-session", "Field edits per form."))
    var editsPerSession = defaults.limits.editsPerSession.description

    @Option(help: help("edits-per-address", "Field edits per address."))
    var editsPerAddress = defaults.limits.editsPerAddress.description

    @Option(help: help("lookups-per-session", "Username look-ups per form (live answers beyond it wait)."))
    var lookupsPerSession = defaults.limits.lookupsPerSession.description

    @Option(help: help("lookups-per-address", "Username look-ups per address."))
    var lookupsPerAddress = defaults.limits.lookupsPerAddress.description

    @Option(help: help("signups-per-address", "Sign-up posts per address."))
    var signupsPerAddress = defaults.limits.signupsPerAddress.description

    @Option(help: help("signin-failures-per-account", "Failed sign-ins per account before each try must wait."))
    var signinFailuresPerAccount = defaults.limits.signinFailuresPerAccount.description

    @Option(help: help("signin-failures-per-address", "Failed sign-ins per address before each try must wait."))
    var signinFailuresPerAddress = defaults.limits.signinFailuresPerAddress.description

    @Option(help: help("hashes-per-address", "Password hashes one address may have queued or running."))
    var hashesPerAddress = defaults.limits.hashesPerAddress

    @Option(help: help("hash-queue-length", "Password hashes waiting per kind (sign-up, sign-in) before 503."))
    var hashQueueLength = defaults.limits.hashQueueLength

    static let environmentOptions: [(name: String, kind: EnvironmentArguments.Kind)] = [
        ("trusted-proxy", .repeatable), ("public-origin", .repeatable),
        ("max-connections", .option), ("connections-per-address", .option), ("idle-timeout", .option),
        ("connection-memory-kib", .option), ("max-sessions", .option), ("session-idle-minutes", .option), ("shutdown-grace", .option),
        ("pages-per-address", .option), ("sessions-per-address", .option), ("live-sessions-per-address", .option),
        ("edits-per-session", .option), ("edits-per-address", .option), ("lookups-per-session", .option),
        ("lookups-per-address", .option), ("signups-per-address", .option),
        ("signin-failures-per-account", .option), ("signin-failures-per-address", .option),
        ("hashes-per-address", .option), ("hash-queue-length", .option),
    ]

    func validate() throws {
        for (flag, value) in rates {
            do { _ = try Rate(parsing: value) } catch { throw ValidationError("--\(flag): \(error)") }
        }
        for proxy in trustedProxy where IPAddressRange(proxy) == nil {
            throw ValidationError("--trusted-proxy: '\(proxy)' is not an IP address or CIDR range.")
        }
        for origin in publicOrigin {
            guard let url = URL(string: origin), ["http", "https"].contains(url.scheme ?? ""), url.host != nil,
                  url.path.isEmpty || url.path == "/" else {
                throw ValidationError("--public-origin: '\(origin)' is not an origin like https://signup.example.com.")
            }
        }
        let counts = [("max-connections", maxConnections), ("connections-per-address", connectionsPerAddress),
                      ("idle-timeout", idleTimeout), ("max-sessions", maxSessions),
                      ("session-idle-minutes", sessionIdleMinutes), ("shutdown-grace", shutdownGrace),
                      ("live-sessions-per-address", liveSessionsPerAddress), ("hashes-per-address", hashesPerAddress),
                      ("hash-queue-length", hashQueueLength)]
        for (flag, value) in counts where value < 0 {
            throw ValidationError("--\(flag) must not be negative.")
        }
        // Below 4 KiB a browser's ordinary request headers no longer fit; above 1 MiB
        // thousands of streams would pin gigabytes.
        guard (4...1024).contains(connectionMemoryKib) else {
            throw ValidationError("--connection-memory-kib must be between 4 and 1024.")
        }
        for (flag, value) in [("max-sessions", maxSessions), ("hashes-per-address", hashesPerAddress),
                              ("live-sessions-per-address", liveSessionsPerAddress), ("max-connections", maxConnections)]
        where value == 0 {
            throw ValidationError("--\(flag) must be at least 1.")
        }
    }

    private var rates: [(String, String)] {
        [("pages-per-address", pagesPerAddress), ("sessions-per-address", sessionsPerAddress),
         ("edits-per-session", editsPerSession), ("edits-per-address", editsPerAddress),
         ("lookups-per-session", lookupsPerSession), ("lookups-per-address", lookupsPerAddress),
         ("signups-per-address", signupsPerAddress), ("signin-failures-per-account", signinFailuresPerAccount),
         ("signin-failures-per-address", signinFailuresPerAddress)]
    }

    func apply(to configuration: inout SignupApplication.Configuration) throws {
        configuration.trustedProxies = trustedProxy.compactMap(IPAddressRange.init)
        configuration.publicOrigins = publicOrigin.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        configuration.connectionLimit = maxConnections
        configuration.connectionsPerAddress = connectionsPerAddress
        configuration.idleTimeoutSeconds = idleTimeout
        configuration.connectionMemoryBytes = connectionMemoryKib * 1024
        configuration.maximumSessions = maxSessions
        configuration.sessionIdleLifetime = TimeInterval(sessionIdleMinutes * 60)
        configuration.shutdownGrace = TimeInterval(shutdownGrace)
        var limits = configuration.limits
        limits.pagesPerAddress = try Rate(parsing: pagesPerAddress)
        limits.newSessionsPerAddress = try Rate(parsing: sessionsPerAddress)
        limits.liveSessionsPerAddress = liveSessionsPerAddress
        limits.editsPerSession = try Rate(parsing: editsPerSession)
        limits.editsPerAddress = try Rate(parsing: editsPerAddress)
        limits.lookupsPerSession = try Rate(parsing: lookupsPerSession)
        limits.lookupsPerAddress = try Rate(parsing: lookupsPerAddress)
        limits.signupsPerAddress = try Rate(parsing: signupsPerAddress)
        limits.signinFailuresPerAccount = try Rate(parsing: signinFailuresPerAccount)
        limits.signinFailuresPerAddress = try Rate(parsing: signinFailuresPerAddress)
        limits.hashesPerAddress = hashesPerAddress
        limits.hashQueueLength = hashQueueLength
        configuration.limits = limits
    }

    /// The hard limit on open files (the server raises its soft limit to it at start), or nil.
    static var openFileLimit: Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_max != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_max)
    }

    /// A form-token key given as 64 hex digits (LIVESIGNUP_FORM_TOKEN_KEY).
    static func key(fromHex hex: String) throws -> [UInt8] {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else {
            throw ValidationError("LIVESIGNUP_FORM_TOKEN_KEY must be 64 hex digits (32 bytes), e.g. from `openssl rand -hex 32`.")
        }
        return try stride(from: 0, to: 64, by: 2).map { index in
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                throw ValidationError("LIVESIGNUP_FORM_TOKEN_KEY must be hex digits only.")
            }
            return byte
        }
    }
}
