import Clocks
import Dispatch
import Foundation
import Identity
import Logging
import MicroHTTPD
import OutsideHTTP
import SignupDomain
import SignupLookups
import WebKernel
import Locking

/// The whole sign-up web app: an HTTP server, the form sessions and the pages, wired to an
/// account store. Start it, read `port`, stop it.
public final class SignupApplication: Sendable {
    public struct Configuration: Sendable {
        /// Every setting at its default, built once: the command line's defaults read it.
        /// (Each `Configuration()` builds the classic policy; the options used to build five
        /// while parsing, about half of a debug server's start.)
        public static let defaults = Configuration()

        public var host = "127.0.0.1"
        public var port: UInt16 = 8080
        public var publicDirectory = URL(fileURLWithPath: "Public")
        public var templatesDirectory = URL(fileURLWithPath: "Templates")
        public var policy = FormPolicy.classic()
        /// Where `password.breached` is answered (`--breached-passwords`, `-api`); nil: the
        /// rules have no such requirement.
        public var breachedPasswords: BreachedPasswordChecker?
        /// Where `email.deliverable` is answered (`--email-dns-check`); nil: no such requirement.
        public var mailDomains: MailDomainChecker?
        public var availabilityDebounce: Duration = .milliseconds(300)
        /// A session unused this long, with no open stream, is dropped (its token builds a
        /// fresh one if used again).
        public var sessionIdleLifetime: TimeInterval = 30 * 60
        /// `POST /recover` answers no sooner than this after it arrived, whatever it found: an
        /// account's answer writes a mail that a made-up name's does not, about a tenth of a
        /// SQLite commit's time (issue 42), and nobody may learn from the clock which names
        /// exist. Real time, not `clock`'s: it is what a client measures.
        public var recoveryAnswerFloor: TimeInterval = 0.05
        /// Form sessions held at once; when full, the longest-idle ones without a stream go.
        /// About 20 KiB each without a stream (see docs/SECURITY.md for the memory bound).
        public var maximumSessions = 20_000
        /// How long after a page was served its token may still start a live session.
        /// (A plain form post is accepted with a genuine token of any age.)
        public var formTokenLifetime: TimeInterval = 24 * 60 * 60
        /// The key that signs form tokens; nil takes the one stored in the account store
        /// (created on first start), so restarts and other instances accept the same tokens.
        public var formTokenKey: [UInt8]?
        /// The 32-byte key that seals second factors' secrets and keys their recovery codes
        /// (`LIVESIGNUP_SECOND_FACTOR_KEY`): kept outside the database, a copy of the database
        /// alone opens no second factor. Nil: a key kept in the store (`second-factor-key`).
        public var secondFactorKey: [UInt8]?
        /// The 32-byte key that seals the provider sign-in's cookies (`LIVESIGNUP_PROVIDER_COOKIE_KEY`):
        /// outside the database like the second factor's, so a copy of the database alone forges
        /// no provider answer. Nil: a key kept in the store (`provider-cookie-key`).
        public var providerCookieKey: [UInt8]?
        /// `--second-factor`: overrides the policy's `second_factor` (nil: the policy's word).
        public var secondFactorRule: SecondFactorRule?
        /// Each provider's client secret by its id, read from the environment variable its
        /// declaration names (`client_secret_env`); a provider without one stops the start.
        public var providerClientSecrets: [String: String] = [:]
        /// Each confidential application's secret by its client id (issue 56), read from the
        /// variable its declaration names; one without it stops the start.
        public var clientSecrets: [String: String] = [:]
        /// Also speak the pseudo-locale `en-xa` (accented, 40 % longer English), for finding
        /// hard-coded texts and layouts that break on long words (`--pseudo-locale`).
        public var pseudoLocale = false
        /// Bounds on every call to a provider (discovery, keys, the code's exchange).
        public var providerFetchLimits = BoundedHTTPFetcher.Limits(maxBytes: 256 * 1024, deadline: 5, maxConcurrent: 16,
                                                                   failuresBeforePause: 5, pause: 30)
        /// This process's name among several behind a proxy; it starts every token minted
        /// here, and only this instance's tokens start live sessions here (`InstanceID`).
        public var instanceID = InstanceID.fromHostName()
        public var workerThreads = 2
        public var connectionLimit = 10_000
        /// Connections one client address may hold (0 = unlimited). Behind a reverse proxy
        /// all connections come from it: set 0 or a high number there.
        public var connectionsPerAddress = 256
        /// Seconds a connection may sit idle (also between the bytes of a slow request).
        public var idleTimeoutSeconds = 30
        public var maxBodyBytes = 16 * 1024
        /// libmicrohttpd's memory pool per connection. Requests whose headers need more than
        /// about half of it get 431. 8 KiB admits about 4 KiB of headers, plenty for this
        /// site's requests, and keeps an idle page view with its stream near 13 KiB instead
        /// of 29 KiB with the library's 32 KiB (docs/DEVELOPMENT.md has the figures).
        public var connectionMemoryBytes = 8 * 1024
        /// Seconds between the `: ping` comments on every open event stream (`--heartbeat-seconds`).
        /// A round costs about 13 µs of CPU a stream (mostly the kernel's TCP send), so
        /// 19,000 idle streams cost about 2 % of a core at 15 s (Benchmarks/README).
        public var heartbeatIntervalSeconds: Double = 15
        /// Sent as the stream's `retry:`: how long a browser waits before reconnecting.
        public var retryMilliseconds = 2_000
        /// Per-client and per-form limits.
        public var limits = SignupLimits()
        /// Proxies whose `X-Forwarded-For` / `-Proto` / `-Host` are believed.
        public var trustedProxies: [IPAddressRange] = []
        /// Origins the site is served under, for the cross-site check, when a proxy changes
        /// the scheme or host (e.g. "https://signup.example.com").
        public var publicOrigins: [String] = []
        /// Origins besides this site's own that `return_to` may send a person to after signing
        /// in or up (e.g. "https://app.example.com").
        public var returnToOrigins: [String] = []
        /// Marks the sign-in cookie `Secure` (set it when a TLS proxy serves the site); an
        /// https `publicOrigins` entry does the same by itself.
        public var secureCookies = false
        /// The sign-in cookie's `Domain` (e.g. "example.com" to reach app.example.com beside
        /// signup.example.com); nil keeps it to this host.
        public var cookieDomain: String?
        /// The key mails are sealed with in the outbox (`LIVESIGNUP_MAIL_KEY`); nil uses the
        /// one in the account store, shared by every instance. Given, it is never stored.
        public var mailSealingKey: [UInt8]?
        /// The key codes and links are hashed with (`LIVESIGNUP_VERIFICATION_KEY`); nil uses
        /// the one in the account store. Given, it is never stored.
        public var verificationCodeKey: [UInt8]?
        /// Where `account.created` goes as a signed Standard Webhook; nil sends none.
        public var webhooks: WebhookSettings?
        /// Proving email addresses before accounts exist; nil creates accounts at once.
        public var emailVerification: EmailVerificationSettings?
        /// The proof of work every sign-up pays; nil asks for none (the command turns it on).
        public var proofOfWork: ProofOfWorkSettings?
        /// The key proofs of work are signed with (`LIVESIGNUP_PROOF_KEY`); nil uses the one
        /// in the account store, shared by every instance.
        public var proofOfWorkKey: [UInt8]?
        /// How long a signed-in session lasts, however much it is used.
        public var signInLifetime: TimeInterval = 7 * 24 * 60 * 60
        /// A signed-in session unused this long ends before its lifetime.
        public var signInIdleTimeout: TimeInterval = 24 * 60 * 60
        /// How long after its owner last proved who they are (a sign-in, or confirming it on
        /// `/account`) a session may make sensitive changes (`--recent-signin-minutes`).
        public var recentSignInLifetime: TimeInterval = 5 * 60
        /// How long a deleted account's username is kept from new accounts, so nobody takes
        /// over its identity at once (`--deleted-username-days`).
        public var deletedUsernameReservation: TimeInterval = 30 * 86_400
        /// How long SIGTERM waits for sign-ups already hashing before answering them 503.
        public var shutdownGrace: TimeInterval = 10
        /// argon2id through libsodium: t=2, m=64 MiB by default (see docs/SECURITY.md).
        public var passwordHasher: any PasswordHashing = Argon2idPasswordHasher()
        /// Hashes computed at once at most; more wait their turn, so a burst of sign-ups
        /// cannot use more than this many × the hash's memory.
        public var maximumConcurrentHashes = max(1, ProcessInfo.processInfo.activeProcessorCount)
        /// `/metrics`: the Prometheus text and who may read it; nil answers `404` to everyone.
        public var metricsExport: MetricsExport?
        /// Where the one-line-per-request access log goes: a logger of its own
        /// (`LoggerAccessLines`), or the executable's direct writer of the same text; nil
        /// sends the lines to the app's logger.
        public var accessLines: (any AccessLineWriting)?
        /// Told a limit's name (`livesignup_rate_limited_total`'s label) each time a request
        /// asks that limit, and `hashing` for each password hash: how a test walks the route
        /// table to check that every route names the limits it can spend, and no other.
        public var onLimitConsulted: (@Sendable (String) -> Void)?
        /// The one clock the app runs by: sessions expire, limits refill, codes and signed-in
        /// sessions end, the outbox schedules, sweeps and the heartbeat run, and a live
        /// username look-up over its budget waits for its turn. Tests give a `TestClock`.
        public var clock: any WallClock = SystemClock()

        public init() {}
    }

    public let configuration: Configuration
    /// Internal for tests that ask a service directly (`SignInFunnelTests`).
    let services: Services
    private let server: HTTPServer
    private let routes: Router
    /// What the app and every flow keep only for a while (`Flow.sweeps`), swept together.
    private let sweeps: [Sweep]
    /// Every flow's rows, as the router routes them (for tests that walk them).
    var routeTable: RouteTable { routes.table }
    /// Set when `stop` begins (`Services.stopping`).
    private var stopping: Locked<Bool> { services.core.stopping }
    private var logger: Logger { services.logger }
    private var sessions: LiveFormSessionRegistry { services.form.sessions }

    public init(configuration: Configuration, store: any AccountStore, logger: Logger = Logger(label: "livesignup")) throws {
        self.configuration = configuration
        let services = try Services(configuration: configuration, store: store, logger: logger)
        self.services = services
        let routes = Router(services)
        let store = services.store
        sweeps = [
            Sweep(what: "full shared limits") { try store.removeFullSharedBuckets(at: $0) },
            // Delivered mails and webhooks stay a week, for operators asking what went out.
            Sweep(what: "delivered outbox events") { try store.removeDeliveredEvents(deliveredBefore: $0.addingTimeInterval(-7 * 86_400)) },
            // The funnel's minutes stay as long as an operator compares this quarter with the last.
            Sweep(what: "old funnel counts") { try store.removeFunnelCounts(before: $0.addingTimeInterval(-Self.funnelRetention)) },
        ] + Router.flows.flatMap { $0.sweeps(services) }
        self.routes = routes
        let metrics = services.metrics, repeatLimited = services.core.repeatLimited
        server = HTTPServer(
            configuration: HTTPServerConfiguration(
                host: configuration.host, port: configuration.port,
                workerThreads: configuration.workerThreads,
                connectionLimit: configuration.connectionLimit,
                perAddressConnectionLimit: configuration.connectionsPerAddress,
                idleTimeoutSeconds: configuration.idleTimeoutSeconds,
                maxBodyBytes: configuration.maxBodyBytes,
                connectionMemoryBytes: configuration.connectionMemoryBytes,
                heartbeatIntervalSeconds: configuration.heartbeatIntervalSeconds,
                clock: configuration.clock,
                errorLog: { message in
                    // A client that went away is the web working normally: counted, and at
                    // debug for whoever traces one connection. The rest are server problems,
                    // each cause at most once a minute with a count of its repeats.
                    if message.isClientGone {
                        metrics.clientDisconnects.increment()
                        logger.debug("libmicrohttpd: \(message.text)")
                    } else {
                        repeatLimited.log(.error, "libmicrohttpd: \(message.text)", cause: "libmicrohttpd " + message.template)
                    }
                }),
            responder: routes)
        // Weakly: the server owns the routes whose services read its port and stream count.
        services.core.server.server = server
    }

    /// Answers a request in process, without a socket (as Hummingbird's testing framework
    /// does): routing, limits, metrics and handlers exactly as for a served request; a
    /// deferred answer (password hashing) is awaited. Needs no `start()`.
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let response = routes.respond(to: request)
        guard case .deferred(let work) = response.body else { return response }
        return await withCheckedContinuation { continuation in
            work.start { continuation.resume(returning: $0) }
        }
    }

    /// The port being listened on (the chosen one when configured with port 0).
    public var port: UInt16 { server.port }

    /// Form sessions currently alive.
    public var sessionCount: Int { sessions.count }

    /// Event streams currently open.
    public var openStreamCount: Int { server.openStreamCount }

    public func start() throws {
        try server.start()
        for delivery in services.deliveries { delivery.start() }
        scheduleSweep(every: min(60, max(1, configuration.sessionIdleLifetime / 4)))
        scheduleFunnelFlush()
        let stopping = self.stopping
        services.signIn.accountStreams.start(on: configuration.clock, isStopping: { stopping.withLock { $0 } })
        logger.info("Listening", metadata: ["url": "http://\(configuration.host):\(port)"])
        if configuration.publicOrigins.isEmpty {
            logger.notice("No --public-origin: this site's origin follows each request's Host (and X-Forwarded-Host from a trusted proxy), for the cross-site check, return_to and the passkey rp id; set --public-origin in production")
        }
    }

    /// Sweeps idle sessions every `interval` seconds on the app's clock (so a test's clock
    /// drives sweeps too) until the app stops.
    private func scheduleSweep(every interval: TimeInterval) {
        configuration.clock.every(interval) { [weak self] in
            guard let self, !stopping.withLock({ $0 }) else { return false }
            sweep()
            return true
        }
    }

    /// How long the store keeps the funnel's counts (`signup-server funnel --since` reaches this far back).
    static let funnelRetention: TimeInterval = 90 * 86_400
    /// Seconds between the funnel's flushes to the store: one write (one transaction) each,
    /// whatever the traffic, and at most this much lost if the process dies unstopped.
    static let funnelFlushInterval: TimeInterval = 5

    /// Adds the funnel's new counts to the store every few seconds until the app stops (which
    /// flushes once more).
    private func scheduleFunnelFlush() {
        configuration.clock.every(Self.funnelFlushInterval) { [weak self] in
            guard let self, !stopping.withLock({ $0 }) else { return false }
            flushFunnel()
            return true
        }
    }

    /// One flush; a store that fails keeps the counts for the next (said once a minute at most).
    private func flushFunnel() {
        do {
            try services.form.funnel.flush(to: services.store, at: configuration.clock.now)
        } catch {
            services.core.repeatLimited.log(.warning, "Could not add the sign-up funnel's counts to the store (kept for the next try): \(error)",
                                            cause: "funnel flush")
        }
    }

    private func sweep() {
        let removed = sessions.removeExpired()
        if removed > 0 { logger.debug("Expired idle form sessions", metadata: ["count": "\(removed)"]) }
        let now = configuration.clock.now
        for sweep in sweeps {
            do {
                let count = try sweep.run(now)
                if count > 0 { logger.debug("Swept \(sweep.what)", metadata: ["count": "\(count)"]) }
            } catch {
                logger.warning("Could not sweep \(sweep.what)", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Drops sessions idle past their lifetime now, as the periodic sweep does.
    @discardableResult
    public func removeExpiredSessions() -> Int { sessions.removeExpired() }

    /// Stops without crashing and without leaving anyone unanswered: no new connections or
    /// requests (503), sign-ups not yet hashing answered 503, those hashing given `grace`
    /// seconds (default `shutdownGrace`) to finish, streams ended, then the daemon stopped.
    /// Returns false if a connection could not be released (the process should just exit).
    @discardableResult
    public func stop(grace: TimeInterval? = nil) -> Bool {
        stopping.withLock { $0 = true }
        server.beginShutdown()
        for delivery in services.deliveries { delivery.stop() }
        services.form.hashing.shutDown()
        let stopped = server.finishShutdown(grace: grace ?? configuration.shutdownGrace)
        // After the last request: what they counted reaches the store too.
        flushFunnel()
        if stopped {
            logger.info("Stopped")
        } else {
            logger.error("Stopped with connections that could not be released")
        }
        return stopped
    }
}
