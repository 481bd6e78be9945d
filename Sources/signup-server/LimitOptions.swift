import ArgumentParser
import Foundation
import MicroHTTPD
import SignupServer
import WebKernel

/// The flags for everything that keeps one client from locking others out. Defaults come
/// from `SignupLimits` and `SignupApplication.Configuration`; docs/CONFIGURATION.md lists them all.
struct LimitOptions: ParsableArguments {
    private static var defaults: SignupApplication.Configuration { .defaults }

    @Option(help: help("trusted-proxy"))
    var trustedProxy: [String] = []

    @Option(help: help("public-origin"))
    var publicOrigin: [String] = []

    @Option(help: help("return-to-allow"))
    var returnToAllow: [String] = []

    @Option(help: help("max-connections"))
    var maxConnections = LimitOptions.openFileLimit.map { max(64, $0 - 100) } ?? defaults.connectionLimit

    @Option(help: help("connections-per-address"))
    var connectionsPerAddress = defaults.connectionsPerAddress

    @Option(help: help("idle-timeout"))
    var idleTimeout = defaults.idleTimeoutSeconds

    @Option(help: help("heartbeat-seconds"))
    var heartbeatSeconds = Int(defaults.heartbeatIntervalSeconds)

    @Option(help: help("connection-memory-kib"))
    var connectionMemoryKib = defaults.connectionMemoryBytes / 1024

    @Option(help: help("max-sessions"))
    var maxSessions = defaults.maximumSessions

    @Option(help: help("session-idle-minutes"))
    var sessionIdleMinutes = Int(defaults.sessionIdleLifetime / 60)

    @Option(help: help("shutdown-grace"))
    var shutdownGrace = Int(defaults.shutdownGrace)

    // The limits: each declared in `LimitSetting` (flag, help, default, the 429 it names);
    // here only the option, its type, and its line in `limitValues`.
    @Option(help: help(.pagesPerAddress)) var pagesPerAddress = LimitSetting.pagesPerAddress.defaultText
    @Option(help: help(.sessionsPerAddress)) var sessionsPerAddress = LimitSetting.sessionsPerAddress.defaultText
    @Option(help: help(.liveSessionsPerAddress)) var liveSessionsPerAddress = defaults.limits.liveSessionsPerAddress
    @Option(help: help(.editsPerSession)) var editsPerSession = LimitSetting.editsPerSession.defaultText
    @Option(help: help(.editsPerAddress)) var editsPerAddress = LimitSetting.editsPerAddress.defaultText
    @Option(help: help(.lookupsPerSession)) var lookupsPerSession = LimitSetting.lookupsPerSession.defaultText
    @Option(help: help(.lookupsPerAddress)) var lookupsPerAddress = LimitSetting.lookupsPerAddress.defaultText
    @Option(help: help(.signupsPerAddress)) var signupsPerAddress = LimitSetting.signupsPerAddress.defaultText
    @Option(help: help(.signinFailuresPerAccount)) var signinFailuresPerAccount = LimitSetting.signinFailuresPerAccount.defaultText
    @Option(help: help(.signinFailuresPerAddress)) var signinFailuresPerAddress = LimitSetting.signinFailuresPerAddress.defaultText
    @Option(help: help(.secondFactorFailuresPerAccount))
    var secondFactorFailuresPerAccount = LimitSetting.secondFactorFailuresPerAccount.defaultText
    @Option(help: help(.mailsPerRecipient)) var mailsPerRecipient = LimitSetting.mailsPerRecipient.defaultText
    @Option(help: help(.mailsPerAddress)) var mailsPerAddress = LimitSetting.mailsPerAddress.defaultText
    @Option(help: help(.recoveriesPerAccount)) var recoveriesPerAccount = LimitSetting.recoveriesPerAccount.defaultText
    @Option(help: help(.recoveryCodesPerAccount)) var recoveryCodesPerAccount = LimitSetting.recoveryCodesPerAccount.defaultText
    @Option(help: help(.noJavaScriptSignups)) var noJavascriptSignups = LimitSetting.noJavaScriptSignups.defaultText
    @Option(help: help(.noJavaScriptRecoveries)) var noJavascriptRecoveries = LimitSetting.noJavaScriptRecoveries.defaultText
    @Option(help: help(.passkeysPerAddress)) var passkeysPerAddress = LimitSetting.passkeysPerAddress.defaultText
    @Option(help: help(.unknownSessionsPerAddress)) var unknownSessionsPerAddress = LimitSetting.unknownSessionsPerAddress.defaultText
    @Option(help: help(.hashesPerAddress)) var hashesPerAddress = defaults.limits.hashesPerAddress
    @Option(help: help(.hashQueueLength)) var hashQueueLength = defaults.limits.hashQueueLength
    @Option(help: help(.signInSessionsPerAccount)) var signinSessionsPerAccount = defaults.limits.signInSessionsPerAccount
    @Option(help: help(.tokenRequestsPerAddress)) var tokenRequestsPerAddress = LimitSetting.tokenRequestsPerAddress.defaultText
    @Option(help: help(.tokenRequestsPerClient)) var tokenRequestsPerClient = LimitSetting.tokenRequestsPerClient.defaultText

    /// Each limit's option value by its declaration: the one place an option meets its
    /// `LimitSetting` (a case without a line here stops every start, so tests catch it).
    private var limitValues: [LimitSetting: String] {
        let values: [LimitSetting: String] = [
            .pagesPerAddress: pagesPerAddress, .sessionsPerAddress: sessionsPerAddress,
            .liveSessionsPerAddress: String(liveSessionsPerAddress),
            .editsPerSession: editsPerSession, .editsPerAddress: editsPerAddress,
            .lookupsPerSession: lookupsPerSession, .lookupsPerAddress: lookupsPerAddress,
            .signupsPerAddress: signupsPerAddress,
            .signinFailuresPerAccount: signinFailuresPerAccount, .signinFailuresPerAddress: signinFailuresPerAddress,
            .secondFactorFailuresPerAccount: secondFactorFailuresPerAccount,
            .mailsPerRecipient: mailsPerRecipient, .mailsPerAddress: mailsPerAddress,
            .recoveriesPerAccount: recoveriesPerAccount, .recoveryCodesPerAccount: recoveryCodesPerAccount,
            .noJavaScriptSignups: noJavascriptSignups, .noJavaScriptRecoveries: noJavascriptRecoveries,
            .passkeysPerAddress: passkeysPerAddress, .unknownSessionsPerAddress: unknownSessionsPerAddress,
            .hashesPerAddress: String(hashesPerAddress), .hashQueueLength: String(hashQueueLength),
            .signInSessionsPerAccount: String(signinSessionsPerAccount),
            .tokenRequestsPerAddress: tokenRequestsPerAddress, .tokenRequestsPerClient: tokenRequestsPerClient,
        ]
        precondition(values.count == LimitSetting.allCases.count, "every LimitSetting needs its option in LimitOptions")
        return values
    }

    func validate() throws {
        var scratch = SignupLimits()
        for setting in LimitSetting.allCases {
            do {
                try setting.set(limitValues[setting] ?? "", in: &scratch)
            } catch let error as LimitSettingError {
                throw ValidationError("--\(setting.flag) \(error)")
            } catch {
                throw ValidationError("--\(setting.flag): \(error)")
            }
        }
        for proxy in trustedProxy where IPAddressRange(proxy) == nil {
            throw ValidationError("--trusted-proxy: '\(proxy)' is not an IP address or CIDR range.")
        }
        for origin in publicOrigin + returnToAllow {
            if case .failure(let problem) = SiteOrigin.normalized(origin) {
                let flag = publicOrigin.contains(origin) ? "--public-origin" : "--return-to-allow"
                throw ValidationError("\(flag): \(problem).")
            }
        }
        let counts = [("max-connections", maxConnections), ("connections-per-address", connectionsPerAddress),
                      ("idle-timeout", idleTimeout), ("max-sessions", maxSessions),
                      ("session-idle-minutes", sessionIdleMinutes), ("shutdown-grace", shutdownGrace)]
        for (flag, value) in counts where value < 0 {
            throw ValidationError("--\(flag) must not be negative.")
        }
        // Under a second the pings would be most of an idle server's work; over an hour
        // no proxy keeps a silent connection open (nginx's shipped config allows 1 h).
        guard (1...3600).contains(heartbeatSeconds) else {
            throw ValidationError("--heartbeat-seconds must be between 1 and 3600.")
        }
        // Below 4 KiB a browser's ordinary request headers no longer fit; above 1 MiB
        // thousands of streams would pin gigabytes.
        guard (4...1024).contains(connectionMemoryKib) else {
            throw ValidationError("--connection-memory-kib must be between 4 and 1024.")
        }
        for (flag, value) in [("max-sessions", maxSessions), ("max-connections", maxConnections)]
        where value == 0 {
            throw ValidationError("--\(flag) must be at least 1.")
        }
    }

    func apply(to configuration: inout SignupApplication.Configuration) throws {
        configuration.trustedProxies = trustedProxy.compactMap(IPAddressRange.init)
        // Normalized by the app (`SiteOrigin`); `validate` has refused what is not an origin.
        configuration.publicOrigins = publicOrigin
        configuration.returnToOrigins = returnToAllow
        configuration.connectionLimit = maxConnections
        configuration.connectionsPerAddress = connectionsPerAddress
        configuration.idleTimeoutSeconds = idleTimeout
        configuration.connectionMemoryBytes = connectionMemoryKib * 1024
        configuration.heartbeatIntervalSeconds = Double(heartbeatSeconds)
        configuration.maximumSessions = maxSessions
        configuration.sessionIdleLifetime = TimeInterval(sessionIdleMinutes * 60)
        configuration.shutdownGrace = TimeInterval(shutdownGrace)
        var limits = configuration.limits
        for setting in LimitSetting.allCases {
            try setting.set(limitValues[setting] ?? "", in: &limits)
        }
        configuration.limits = limits
    }

    /// The hard limit on open files (the server raises its soft limit to it at start), or nil.
    static var openFileLimit: Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_max != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_max)
    }

    /// A 32-byte key given as 64 hex digits in the environment variable `variable`
    /// (LIVESIGNUP_FORM_TOKEN_KEY, LIVESIGNUP_MAIL_KEY, LIVESIGNUP_VERIFICATION_KEY).
    static func key(fromHex hex: String, variable: String = "LIVESIGNUP_FORM_TOKEN_KEY") throws -> [UInt8] {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else {
            throw ValidationError("\(variable) must be 64 hex digits (32 bytes), e.g. from `openssl rand -hex 32`.")
        }
        return try stride(from: 0, to: 64, by: 2).map { index in
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                throw ValidationError("\(variable) must be hex digits only.")
            }
            return byte
        }
    }
}
