import Clocks
import Dispatch
import Foundation
import Identity
import Logging
import MicroHTTPD
import OpenIDConnect
import OutsideHTTP
import SignupDomain
import SignupLookups
import WebKernel
import Locking

/// Every service the handlers use, built once from the configuration and the store: the one
/// place the app is wired. A handler struct takes what it uses from here (its `init(_:)`), so
/// a new dependency is one line where it is built and one where it is used.
struct Services: Sendable {
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
    let limiters: ClientLimiters
    let refusals: Refusals
    let languages: Languages
    let renderer: PageRenderer
    let assets: StaticAssets
    /// The pages in English; each request carries its own in the visitor's language.
    let pages: Pages
    let availability: StoreAvailabilityChecker
    let sessions: LiveFormSessionRegistry
    let hashing: PasswordHashingQueue
    /// A hash of a random password, verified against when a sign-in names no account.
    let placeholderHash: String
    let addresses: ClientAddressResolver
    let sameOrigin: SameOriginPolicy
    let returnTo: ReturnTo
    let signedIn: SignedInUsers
    /// Whether this browser proved who it is recently enough for a sensitive change.
    let recentSignIn: RecentSignIn
    let proofOfWork: ProofOfWorkGate?
    let webhooks: OutboxDelivery?
    /// Proofs of addresses and the mail outbox they write to, when addresses are proved.
    let proofs: AddressProofs?
    let mails: OutboxDelivery?
    /// Mails about existing accounts (recovery), delivered on their own lane.
    let accountMails: OutboxDelivery?
    let passkeyChallenges: PasskeyChallenges
    /// The open `/account` pages' streams, refreshed from the store once a second.
    let accountStreams: AccountStreams
    /// Seals second factors' secrets and keys their recovery codes.
    let secondFactorSeal: SecondFactorSeal
    /// Whether second factors are offered, or required (the flag, else the policy).
    let secondFactorRule: SecondFactorRule
    /// Wrong codes in a row before the app's codes are refused (the policy's).
    let secondFactorLockout: SecondFactorLockout
    /// The OpenID providers people may sign up and sign in through, by id (issue 45).
    let providers: [String: ConfiguredProvider]
    let providerCookies: ProviderCookies
    /// Where providers send people back: the first `--public-origin`, else the listening address.
    let providerRedirectURI: @Sendable () -> URL
    /// The one clock (`Configuration.clock`), and its reading as the parts that only ask
    /// for the time take it.
    let clock: any WallClock
    let now: @Sendable () -> Date
    /// The server, once made (after the services): its port and open streams.
    let server: WeakServer
    /// Set when a stop begins, so `/readyz` turns 503 before anything else changes.
    let stopping = Locked(false)

    init(configuration: SignupApplication.Configuration, store: any AccountStore, logger: Logger) throws {
        self.configuration = configuration
        self.store = store
        self.logger = logger
        let clock = configuration.clock
        self.clock = clock
        let now: @Sendable () -> Date = { clock.now }
        self.now = now
        let lookups = Lookups(breachedPasswords: configuration.breachedPasswords, mailDomains: configuration.mailDomains)
        self.lookups = lookups
        let policy = configuration.policy.lookingUp(lookups.kinds)
        self.policy = policy
        let server = WeakServer()
        self.server = server
        let metrics = ServerMetrics()
        self.metrics = metrics
        let repeatLimited = RepeatLimitedLog(logger: logger, now: now)
        self.repeatLimited = repeatLimited
        let consulted: (@Sendable (RateLimitName) -> Void)? = configuration.onLimitConsulted.map { observe in
            { @Sendable name in observe(name.rawValue) }
        }
        let limiters = ClientLimiters(configuration.limits, store: store, logger: logger, now: now, consulted: consulted)
        self.limiters = limiters
        refusals = Refusals(countLimited: { metrics.rateLimited($0) }, logger: logger)
        Self.observe(configuration, metrics: metrics, log: repeatLimited)

        do {
            languages = try Languages(directory: configuration.templatesDirectory.appendingPathComponent("i18n"), policy: policy,
                                      pseudoLocale: configuration.pseudoLocale)
        } catch {
            throw ConfigurationError("\(error)")
        }
        renderer = try PageRenderer(directory: configuration.templatesDirectory,
                                    required: Router.pageTemplates + PageRenderer.ownTemplates + MailContent.templates,
                                    serviceName: policy.settings.serviceName,
                                    languageNames: languages.all.map { ($0.tag, $0.catalog.name) },
                                    providers: policy.settings.providers.map { ($0.id, $0.name) })
        assets = try StaticAssets(directory: configuration.publicDirectory)
        pages = Pages(renderer: renderer, assets: assets, languages: languages, language: languages.english)

        let availability = StoreAvailabilityChecker(store: store, isReserved: { policy.isReserved($0) }, now: now)
        self.availability = availability
        proofOfWork = try configuration.proofOfWork.map { settings in
            let key = try configuration.proofOfWorkKey
                ?? store.secret(named: "proof-of-work-key", createdBy: ProofOfWorkAuthority.makeKey)
            return ProofOfWorkGate(
                authority: ProofOfWorkAuthority(key: key), pricing: ProofOfWorkPricing(settings: settings, now: now),
                store: store, withoutJavaScript: limiters.noJavaScriptSignups, metrics: metrics, logger: logger, now: now)
        }
        let secondFactorKey = try configuration.secondFactorKey
            ?? store.secret(named: "second-factor-key", createdBy: SecondFactorSeal.makeKey)
        guard secondFactorKey.count == 32 else {
            throw ConfigurationError("The second factor's key must be 32 bytes, not \(secondFactorKey.count).")
        }
        secondFactorSeal = SecondFactorSeal(key: secondFactorKey)
        secondFactorRule = configuration.secondFactorRule ?? configuration.policy.settings.secondFactor
        secondFactorLockout = configuration.policy.settings.secondFactorLockout
        let tokenKey = try configuration.formTokenKey
            ?? store.secret(named: "form-token-key", createdBy: FormTokenAuthority.makeKey)
        guard tokenKey.count == FormTokenAuthority.keyLength else {
            throw ConfigurationError("The form token key must be \(FormTokenAuthority.keyLength) bytes, not \(tokenKey.count).")
        }
        if let problem = InstanceID.problem(with: configuration.instanceID) { throw ConfigurationError(problem) }
        let debounce = configuration.availabilityDebounce.components
        sessions = LiveFormSessionRegistry(settings: .init(
            languages: languages,
            availabilityChecker: availability,
            lookups: lookups,
            availabilityDebounce: .nanoseconds(Int(debounce.seconds * 1_000_000_000 + debounce.attoseconds / 1_000_000_000)),
            idleLifetime: configuration.sessionIdleLifetime,
            maximumSessions: configuration.maximumSessions,
            tokenLifetime: configuration.formTokenLifetime,
            tokens: FormTokenAuthority(key: tokenKey, instance: configuration.instanceID),
            limiters: limiters,
            metrics: metrics,
            clock: clock))
        let hasher = TimedPasswordHasher(base: configuration.passwordHasher, timer: metrics.passwordHashDuration,
                                         computed: consulted.map { consulted in { @Sendable in consulted(.hashing) } })
        hashing = PasswordHashingQueue(hasher: hasher,
                                       maximumConcurrentJobs: configuration.maximumConcurrentHashes,
                                       maximumJobsPerClient: configuration.limits.hashesPerAddress,
                                       maximumQueuedPerLane: configuration.limits.hashQueueLength)
        placeholderHash = try configuration.passwordHasher.hash(LiveFormSessionRegistry.makeRandomID())

        let addresses = ClientAddressResolver(trustedProxies: configuration.trustedProxies)
        self.addresses = addresses
        let publicOrigins = try SiteOrigin.normalized(configuration.publicOrigins, setting: "--public-origin")
        let sameOrigin = SameOriginPolicy(publicOrigins: publicOrigins, addresses: addresses)
        self.sameOrigin = sameOrigin
        returnTo = ReturnTo(allowedOrigins: Set(try SiteOrigin.normalized(configuration.returnToOrigins, setting: "--return-to-allow")),
                            sameOrigin: sameOrigin)
        signedIn = SignedInUsers(store: store, lifetime: configuration.signInLifetime,
                                 idleTimeout: configuration.signInIdleTimeout,
                                 // An https public origin is served over TLS: the cookie must never go in clear.
                                 secureCookies: configuration.secureCookies || publicOrigins.contains { $0.hasPrefix("https://") },
                                 cookieDomain: configuration.cookieDomain,
                                 sessionsPerAccount: configuration.limits.signInSessionsPerAccount,
                                 now: now)
        recentSignIn = RecentSignIn(store: store, signedIn: signedIn, now: now, lifetime: configuration.recentSignInLifetime)
        accountStreams = AccountStreams(store: store, signedIn: signedIn, recentSignIn: configuration.recentSignInLifetime,
                                        now: now, logger: logger)
        webhooks = configuration.webhooks.map {
            OutboxDelivery(channel: .webhook, schedule: $0.schedule, courier: WebhookCourier(settings: $0, now: now),
                           store: store, metrics: metrics.outboxes, logger: logger, clock: clock)
        }
        // Proofs of addresses: their keys are the store's, so every instance checks the codes
        // and opens the mails the others made.
        if let settings = configuration.emailVerification {
            let sealingKey = try configuration.mailSealingKey
                ?? store.secret(named: "mail-outbox-key", createdBy: VerificationSecrets.makeKey)
            let codeKey = try configuration.verificationCodeKey
                ?? store.secret(named: "verification-code-key", createdBy: VerificationSecrets.makeKey)
            for (name, key) in [("mail sealing", sealingKey), ("verification code", codeKey)] where key.count != VerificationSecrets.keyLength {
                throw ConfigurationError("The \(name) key must be \(VerificationSecrets.keyLength) bytes, not \(key.count).")
            }
            let delivery = OutboxDelivery(
                channel: .mail, schedule: settings.mail.schedule,
                courier: MailCourier(settings: settings.mail, key: sealingKey, now: now),
                store: store, metrics: metrics.outboxes, logger: logger, clock: clock)
            mails = delivery
            accountMails = OutboxDelivery(
                channel: .accountMail, schedule: settings.mail.schedule,
                courier: MailCourier(settings: settings.mail, key: sealingKey, now: now),
                store: store, metrics: metrics.outboxes, logger: logger, clock: clock)
            let configuredOrigin = publicOrigins.first
            let linkHost = ["0.0.0.0", "::", "127.0.0.1", "::1"].contains(configuration.host) ? "localhost" : configuration.host
            let configuredPort = configuration.port
            let origin: @Sendable () -> String = {
                configuredOrigin ?? "http://\(linkHost):\(configuredPort == 0 ? server.server?.port ?? 0 : configuredPort)"
            }
            proofs = AddressProofs(
                settings: settings, store: store,
                secrets: VerificationSecrets(key: codeKey),
                mails: VerificationMails(renderer: renderer, settings: settings, linkOrigin: origin, sealingKey: sealingKey),
                limiters: limiters, delivery: delivery, now: now)
        } else {
            mails = nil
            accountMails = nil
            proofs = nil
        }
        // Providers: each its own bounded client (a slow one pauses alone), the secret from
        // the environment (never the policy file), and one redirect URI, this site's own.
        var providers: [String: ConfiguredProvider] = [:]
        for declaration in policy.settings.providers {
            guard let secret = configuration.providerClientSecrets[declaration.id], !secret.isEmpty else {
                throw ConfigurationError("The provider '\(declaration.id)' needs its client secret in the environment variable \(declaration.clientSecretVariable), which is not set.")
            }
            let fetcher = BoundedHTTPFetcher(limits: configuration.providerFetchLimits,
                                             headers: ["Accept": "application/json", "User-Agent": "LiveSignup"], now: now)
            providers[declaration.id] = ConfiguredProvider(
                declaration: declaration,
                client: OpenIDProvider(settings: .init(issuer: declaration.issuer, clientID: declaration.clientID,
                                                       clientSecret: secret, scopes: declaration.scopes,
                                                       endpointHosts: Set(declaration.endpointHosts)),
                                       fetcher: fetcher, now: now))
        }
        self.providers = providers
        providerCookies = ProviderCookies(
            key: try configuration.providerCookieKey ?? store.secret(named: "provider-cookie-key", createdBy: ProviderCookies.makeKey),
            secure: signedIn.secureCookies, now: now)
        let redirectOrigin = publicOrigins.first
        let redirectHost = ["0.0.0.0", "::", "127.0.0.1", "::1"].contains(configuration.host) ? "127.0.0.1" : configuration.host
        let redirectPort = configuration.port
        providerRedirectURI = {
            let origin = redirectOrigin
                ?? "http://\(redirectHost):\(redirectPort == 0 ? server.server?.port ?? 0 : redirectPort)"
            return URL(string: origin + ProviderRoutes.callbackPath)!
        }
        passkeyChallenges = PasskeyChallenges(
            key: try store.secret(named: "passkey-challenge-key", createdBy: PasskeyChallenges.makeKey),
            store: store, lifetime: 300, now: now)
    }

    /// The outboxes this app delivers from.
    var deliveries: [OutboxDelivery] { [webhooks, mails, accountMails].compactMap { $0 } }

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
