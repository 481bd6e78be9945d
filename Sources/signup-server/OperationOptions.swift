import ArgumentParser
import Foundation
import Identity
import Logging
import Metrics
import MicroHTTPD
import Prometheus
import SignupDomain
import SignupServer
import WebKernel

/// Logging, metrics and the cookie setting that depends on how the site is deployed.
struct OperationOptions: ParsableArguments {
    @Option(help: help("log-level"))
    var logLevel = "info"

    @Option(help: help("log-format"))
    var logFormat = "text"

    @Option(help: help("access-log"))
    var accessLog = "on"

    @Option(help: help("metrics-allow"))
    var metricsAllow: [String] = []

    @Flag(help: help("secure-cookies"))
    var secureCookies = false

    @Option(help: help("webhook-url"))
    var webhookUrl: String?

    @Option(help: help("webhook-retry-hours"))
    var webhookRetryHours = 24

    @Option(help: help("webhook-first-retry-seconds"))
    var webhookFirstRetrySeconds = 5

    @Option(help: help("cookie-domain"))
    var cookieDomain: String?

    @Option(help: help("signin-lifetime-hours"))
    var signinLifetimeHours = Int(SignupApplication.Configuration.defaults.signInLifetime / 3600)

    @Option(help: help("signin-idle-hours"))
    var signinIdleHours = Int(SignupApplication.Configuration.defaults.signInIdleTimeout / 3600)

    @Option(help: help("recent-signin-minutes"))
    var recentSigninMinutes = Int(SignupApplication.Configuration.defaults.recentSignInLifetime / 60)

    @Option(help: help("deleted-username-days"))
    var deletedUsernameDays = Int(SignupApplication.Configuration.defaults.deletedUsernameReservation / 86_400)

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("Unknown log level '\(logLevel)'. Choose one of: \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        guard ["text", "json"].contains(logFormat) else {
            throw ValidationError("Unknown --log-format '\(logFormat)'. Choose text or json.")
        }
        guard ["on", "off"].contains(accessLog) else {
            throw ValidationError("--access-log is on or off, not '\(accessLog)'.")
        }
        for range in metricsAllow where IPAddressRange(range) == nil {
            throw ValidationError("--metrics-allow: '\(range)' is not an IP address or CIDR range.")
        }
        if let cookieDomain, cookieDomain.wholeMatch(of: #/[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+/#) == nil {
            throw ValidationError("--cookie-domain must be a domain name in lower case such as example.com, not '\(cookieDomain)'.")
        }
        _ = try webhookSettings()
        guard (1...8760).contains(signinLifetimeHours) else {
            throw ValidationError("--signin-lifetime-hours must be 1 to 8760 (a year).")
        }
        guard (1...signinLifetimeHours).contains(signinIdleHours) else {
            throw ValidationError("--signin-idle-hours must be 1 to --signin-lifetime-hours (\(signinLifetimeHours)).")
        }
        guard (1...60).contains(recentSigninMinutes) else {
            throw ValidationError("--recent-signin-minutes must be 1 to 60.")
        }
        guard (0...3650).contains(deletedUsernameDays) else {
            throw ValidationError("--deleted-username-days must be 0 to 3650 (ten years).")
        }
    }

    /// The webhook settings from `--webhook-url`, the retry flags and LIVESIGNUP_WEBHOOK_SECRET
    /// (environment only: a secret stays out of `ps`); nil without a URL. A bad URL or secret
    /// stops the start with the reason.
    func webhookSettings() throws -> WebhookSettings? {
        let secretText = try ConfigurationSources.secret(.webhookSecret) ?? ""
        guard let webhookUrl else {
            if !secretText.isEmpty {
                throw ValidationError("LIVESIGNUP_WEBHOOK_SECRET is set but --webhook-url is not: where should webhooks go?")
            }
            return nil
        }
        guard let url = URL(string: webhookUrl), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
              let host = url.host, !host.isEmpty else {
            throw ValidationError("--webhook-url must be an http(s) URL such as https://app.example.com/hooks/livesignup, not '\(webhookUrl)'.")
        }
        guard !secretText.isEmpty else {
            throw ValidationError("--webhook-url needs LIVESIGNUP_WEBHOOK_SECRET (whsec_ + base64 of 24 to 64 random bytes, e.g. whsec_$(openssl rand -base64 32)).")
        }
        let secret: WebhookSecret
        switch WebhookSecret.parse(secretText) {
        case .success(let parsed): secret = parsed
        case .failure(let reason): throw ValidationError("LIVESIGNUP_WEBHOOK_SECRET \(reason).")
        }
        guard (1...720).contains(webhookRetryHours) else { throw ValidationError("--webhook-retry-hours must be 1 to 720.") }
        guard (1...3600).contains(webhookFirstRetrySeconds) else { throw ValidationError("--webhook-first-retry-seconds must be 1 to 3600.") }
        var settings = WebhookSettings(url: url, secret: secret)
        settings.retryWindow = TimeInterval(webhookRetryHours * 3600)
        settings.firstRetryDelay = TimeInterval(webhookFirstRetrySeconds)
        return settings
    }

    /// Sets up swift-log for the whole process (once) and returns the app's loggers.
    func bootstrapLogging() throws -> (logger: Logger, accessLines: any AccessLineWriting) {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let json = logFormat == "json"
        // Lines are written in batches by a thread of their own; whatever waits is written at exit.
        atexit { BufferedLogOutput.standardError.flush() }
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = json
                ? JSONLogHandler(label: label)
                : TextLogHandler(label: label, output: .standardError)
            handler.logLevel = level
            return handler
        }
        var access = Logger(label: "livesignup.access")
        // Access lines are `info`: they follow --log-level like every line. Off means they are
        // never built, not built and dropped.
        access.logLevel = accessLog == "on" ? level : .critical
        // In the text format the lines are written straight from their values, the bytes
        // `TextLogHandler` would write (a line per request: the metadata dictionary, its
        // sort and the handler's copies were a tenth of an edit's instructions). JSON lines
        // go through the logger.
        let lines: any AccessLineWriting = json
            ? LoggerAccessLines(logger: access)
            : TextAccessLines(label: access.label, logLevel: access.logLevel, output: .standardError)
        return (Logger(label: "livesignup"), lines)
    }

    /// Sets up swift-metrics with Prometheus for the whole process (once).
    func bootstrapMetrics() throws -> MetricsExport {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Request times: from a fraction of a millisecond (an edit) to seconds (a stuck store).
        factory.defaultDurationHistogramBuckets = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
        ]
        // argon2id takes tens to hundreds of milliseconds by design.
        factory.durationHistogramBuckets["livesignup_password_hash_duration_seconds"] = [
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(200),
            .milliseconds(400), .milliseconds(800), .seconds(1.6), .seconds(3.2),
        ]
        MetricsSystem.bootstrap(factory)
        return MetricsExport(allowed: metricsAllow.compactMap(IPAddressRange.init)) {
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            return buffer
        }
    }
}
