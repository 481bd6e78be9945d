import Clocks
import Dispatch
import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel
import Locking

/// Every service the handlers use, built once from the configuration and the store: the one
/// place the app is wired. The core is here (the store, the rules, the clock, the log and the
/// metrics); the rest is built by area, each in its own file, from the core and the areas
/// before it:
///
/// - `site` (Services+Site.swift): pages, languages, this site's origins, limits and refusals;
/// - `form` (Services+Form.swift): the live forms, their look-ups, hashing and proof of work;
/// - `signIn` (Services+SignIn.swift): signed-in sessions, recent sign-in, second factors, passkeys;
/// - `outbox` (Services+Outbox.swift): mail and webhooks, and the proofs of addresses;
/// - `providerSignIn` (Services+Providers.swift): the OpenID providers people sign in through;
/// - `openID` (Services+OpenIDProvider.swift): LiveSignup as the OpenID provider of the
///   operator's applications.
///
/// A handler takes what it uses from here (`ServicesReader`, or its `init(_:)`), so a new
/// dependency is one line in its area and one where it is used.
struct Services: Sendable {
    let core: Core
    let site: SiteServices
    let form: FormServices
    let signIn: SignInServices
    let outbox: OutboxServices
    let providerSignIn: ProviderServices
    let openID: OpenIDProviderServices

    /// What every area is built from and most handlers read.
    struct Core: Sendable {
        let configuration: SignupApplication.Configuration
        let store: any AccountStore
        /// The rules, with exactly the outside requirements `lookups` can answer.
        let policy: FormPolicy
        /// The breach source and the mail-domain checker the rules ask.
        let lookups: Lookups
        let logger: Logger
        let metrics: ServerMetrics
        /// Each kind of failure logged once a minute at most, with a count of its repeats.
        let repeatLimited: RepeatLimitedLog
        /// The one clock (`Configuration.clock`), and its reading as the parts that only ask
        /// for the time take it.
        let clock: any WallClock
        let now: @Sendable () -> Date
        /// The server, once made (after the services): its port and open streams.
        let server = WeakServer()
        /// Set when a stop begins, so `/readyz` turns 503 before anything else changes.
        let stopping = Locked(false)

        /// A limit consulted, told to the tests' observer (`Configuration.onLimitConsulted`).
        var consulted: (@Sendable (RateLimitName) -> Void)? {
            configuration.onLimitConsulted.map { observe in { @Sendable name in observe(name.rawValue) } }
        }

        /// The key the configuration gives, else the store's one named `name` (made by `make`
        /// at the first start, so every instance shares it), refused unless `length` bytes long.
        func key(_ configured: [UInt8]?, named name: String, saying what: String, length: Int? = nil,
                 make: () -> [UInt8]) throws -> [UInt8] {
            let key = try configured ?? store.secret(named: name, createdBy: make)
            if let length, key.count != length {
                throw ConfigurationError("The \(what) key must be \(length) bytes, not \(key.count).")
            }
            return key
        }
    }

    init(configuration: SignupApplication.Configuration, store: any AccountStore, logger: Logger) throws {
        if let problem = InstanceID.problem(with: configuration.instanceID) { throw ConfigurationError(problem) }
        let clock = configuration.clock
        let now: @Sendable () -> Date = { clock.now }
        let lookups = Lookups(breachedPasswords: configuration.breachedPasswords, mailDomains: configuration.mailDomains)
        let metrics = ServerMetrics()
        let repeatLimited = RepeatLimitedLog(logger: logger, now: now)
        Self.observe(configuration, metrics: metrics, log: repeatLimited)
        let core = Core(configuration: configuration, store: store, policy: configuration.policy.lookingUp(lookups.kinds),
                        lookups: lookups, logger: logger, metrics: metrics, repeatLimited: repeatLimited, clock: clock, now: now)
        self.core = core
        site = try SiteServices(core)
        form = try FormServices(core, site)
        signIn = try SignInServices(core, site)
        outbox = try OutboxServices(core, site)
        providerSignIn = try ProviderServices(core, site, signIn)
        openID = try OpenIDProviderServices(core, site, signIn)
    }

    // The core's names, read as `services.store` (the areas are read through their name:
    // `services.signIn.users`).
    var configuration: SignupApplication.Configuration { core.configuration }
    var store: any AccountStore { core.store }
    var policy: FormPolicy { core.policy }
    var logger: Logger { core.logger }
    var metrics: ServerMetrics { core.metrics }
    var now: @Sendable () -> Date { core.now }

    /// Every outbox this app delivers from: mail and webhooks, and the applications'
    /// back-channel logouts.
    var deliveries: [OutboxDelivery] { outbox.deliveries + [openID.backchannelLogouts].compactMap { $0 } }

    /// The breached-password source's and the mail domains' failures, counted and logged (a
    /// broken source fails every look-up: one warning a minute per kind).
    private static func observe(_ configuration: SignupApplication.Configuration, metrics: ServerMetrics,
                                log: RepeatLimitedLog) {
        configuration.breachedPasswords?.observeLookups { verdict, failure in
            metrics.breachLookup(verdict, sourceFailure: failure)
            if let failure {
                log.log(.warning, "Breached-password source failed; the built-in list answered",
                        cause: "breached_passwords " + failure.reason,
                        metadata: ["reason": "\(failure.reason)", "error": "\(failure)"])
            }
        }
        configuration.mailDomains?.observeLookups { check, domain in
            metrics.mailDomainLookup(check)
            if case .failed(let failure) = check {
                log.log(.warning, "DNS gave no answer about an email domain; the address was let through",
                        cause: "email_dns " + failure.reason,
                        metadata: ["reason": "\(failure.reason)", "domain": "\(domain)", "error": "\(failure)"])
            }
        }
    }
}

/// A weak reference to the server, set once during `SignupApplication.init` before any
/// request can arrive; reading a weak reference is thread-safe.
final class WeakServer: @unchecked Sendable {
    weak var server: HTTPServer?
}
