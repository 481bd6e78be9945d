import Foundation
import Logging
import MicroHTTPD
import SignupDomain

/// The whole sign-up web app: an HTTP server, the form sessions and the pages, wired to an
/// account store. Start it, read `port`, stop it.
// @unchecked: every stored property is an immutable `let` of a thread-safe type; the
// Dispatch timer is not marked Sendable but is safe to use from any thread.
public final class SignupApplication: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        public var port: UInt16 = 8080
        public var publicDirectory = URL(fileURLWithPath: "Public")
        public var templatesDirectory = URL(fileURLWithPath: "Templates")
        public var policy = SignupPolicy.classic()
        public var availabilityDebounce: Duration = .milliseconds(300)
        /// A session unused this long, with no open stream, expires (its token answers 404).
        public var sessionIdleLifetime: TimeInterval = 30 * 60
        public var maximumSessions = 100_000
        public var workerThreads = 2
        public var connectionLimit = 10_000
        public var maxBodyBytes = 16 * 1024
        public var heartbeatIntervalSeconds: Double = 15
        /// Sent as the stream's `retry:`: how long a browser waits before reconnecting.
        public var retryMilliseconds = 2_000
        /// argon2id through libsodium: t=2, m=64 MiB by default (see docs/SECURITY.md).
        public var passwordHasher: any PasswordHashing = Argon2idPasswordHasher()
        /// Hashes computed at once at most; more wait their turn, so a burst of sign-ups
        /// cannot use more than this many × the hash's memory.
        public var maximumConcurrentHashes = max(1, ProcessInfo.processInfo.activeProcessorCount)
        /// The clock sessions expire by; tests substitute one they can move.
        public var now: @Sendable () -> Date = { Date() }

        public init() {}
    }

    public let configuration: Configuration
    private let server: HTTPServer
    private let sessions: FormSessionRegistry
    private let sweeper: DispatchSourceTimer
    private let logger: Logger

    public init(configuration: Configuration, store: any AccountStore, logger: Logger = Logger(label: "livesignup")) throws {
        self.configuration = configuration
        self.logger = logger
        let policy = configuration.policy
        let availability = StoreAvailabilityChecker(store: store, isReserved: { policy.isReserved($0) })
        let sessions = FormSessionRegistry(settings: .init(
            policy: configuration.policy,
            availabilityChecker: availability,
            availabilityDebounce: .nanoseconds(Int(configuration.availabilityDebounce.components.seconds * 1_000_000_000
                + configuration.availabilityDebounce.components.attoseconds / 1_000_000_000)),
            idleLifetime: configuration.sessionIdleLifetime,
            maximumSessions: configuration.maximumSessions,
            now: configuration.now))
        self.sessions = sessions
        let routes = SignupRoutes(
            sessions: sessions,
            store: store,
            availability: availability,
            hashing: PasswordHashingQueue(hasher: configuration.passwordHasher,
                                          maximumConcurrentJobs: configuration.maximumConcurrentHashes),
            signedIn: SignedInUsers(now: configuration.now),
            placeholderHash: try configuration.passwordHasher.hash(FormSessionRegistry.makeToken()),
            renderer: try PageRenderer(directory: configuration.templatesDirectory),
            assets: try StaticAssets(directory: configuration.publicDirectory),
            policy: configuration.policy,
            maxBodyBytes: configuration.maxBodyBytes,
            retryMilliseconds: configuration.retryMilliseconds,
            logger: logger)
        server = HTTPServer(
            configuration: HTTPServerConfiguration(
                host: configuration.host, port: configuration.port,
                workerThreads: configuration.workerThreads,
                connectionLimit: configuration.connectionLimit,
                maxBodyBytes: configuration.maxBodyBytes,
                heartbeatIntervalSeconds: configuration.heartbeatIntervalSeconds),
            responder: routes)
        sweeper = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
    }

    /// The port being listened on (the chosen one when configured with port 0).
    public var port: UInt16 { server.port }

    /// Form sessions currently alive.
    public var sessionCount: Int { sessions.count }

    public func start() throws {
        try server.start()
        let interval = min(60, max(1, configuration.sessionIdleLifetime / 4))
        sweeper.schedule(deadline: .now() + interval, repeating: interval, leeway: .seconds(1))
        sweeper.setEventHandler { [sessions, logger] in
            let removed = sessions.removeExpired()
            if removed > 0 { logger.debug("Expired idle form sessions", metadata: ["count": "\(removed)"]) }
        }
        sweeper.resume()
        logger.info("Listening", metadata: ["url": "http://\(configuration.host):\(port)"])
    }

    /// Ends every event stream, then stops accepting connections.
    public func stop() {
        sweeper.cancel()
        sessions.closeAllStreams()
        server.stop()
        logger.info("Stopped")
    }
}
