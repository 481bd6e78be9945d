import Foundation
import Identity
import SignupDomain
import WebKernel

/// The live forms: their sessions, the availability and outside look-ups they ask, the
/// password hashing they queue, and the proof of work a form may have to pay.
struct FormServices: Sendable {
    let availability: StoreAvailabilityChecker
    let sessions: LiveFormSessionRegistry
    let hashing: PasswordHashingQueue
    /// A hash of a random password, verified against when a sign-in names no account.
    let placeholderHash: String
    let proofOfWork: ProofOfWorkGate?
    /// The sign-up funnel's counts (issue 59), flushed to the store by the app.
    let funnel: FormFunnel

    init(_ core: Services.Core, _ site: SiteServices) throws {
        let configuration = core.configuration, policy = core.policy, store = core.store
        availability = StoreAvailabilityChecker(store: store, isReserved: { policy.isReserved($0) }, now: core.now)
        proofOfWork = try configuration.proofOfWork.map { settings in
            let key = try core.key(configuration.proofOfWorkKey, named: "proof-of-work-key", saying: "proof of work",
                                   make: ProofOfWorkAuthority.makeKey)
            return ProofOfWorkGate(
                authority: ProofOfWorkAuthority(key: key), pricing: ProofOfWorkPricing(settings: settings, now: core.now),
                store: store, withoutJavaScript: site.limiters.noJavaScriptSignups, metrics: core.metrics, logger: core.logger,
                now: core.now)
        }
        let tokenKey = try core.key(configuration.formTokenKey, named: "form-token-key", saying: "form token",
                                    length: FormTokenAuthority.keyLength, make: FormTokenAuthority.makeKey)
        // Every requirement any language's form has, in the first policy's order (the
        // catalogs change texts, not rules, so the lists agree; the union is to be sure).
        var requirements: [String] = []
        for language in site.languages.all {
            for id in language.policy.liveRequirementOrder where !requirements.contains(id) { requirements.append(id) }
        }
        funnel = FormFunnel(languages: site.languages.all.map(\.tag), requirements: requirements,
                            noScriptCapacity: configuration.maximumSessions, idleLifetime: configuration.sessionIdleLifetime)
        let debounce = configuration.availabilityDebounce.components
        sessions = LiveFormSessionRegistry(settings: .init(
            languages: site.languages,
            availabilityChecker: availability,
            lookups: core.lookups,
            availabilityDebounce: .nanoseconds(Int(debounce.seconds * 1_000_000_000 + debounce.attoseconds / 1_000_000_000)),
            idleLifetime: configuration.sessionIdleLifetime,
            maximumSessions: configuration.maximumSessions,
            tokenLifetime: configuration.formTokenLifetime,
            tokens: FormTokenAuthority(key: tokenKey, instance: configuration.instanceID),
            limiters: site.limiters,
            metrics: core.metrics,
            funnel: funnel,
            clock: core.clock))
        let hasher = TimedPasswordHasher(base: configuration.passwordHasher, timer: core.metrics.passwordHashDuration,
                                         computed: core.consulted.map { consulted in { @Sendable in consulted(.hashing) } })
        hashing = PasswordHashingQueue(hasher: hasher,
                                       maximumConcurrentJobs: configuration.maximumConcurrentHashes,
                                       maximumJobsPerClient: configuration.limits.hashesPerAddress,
                                       maximumQueuedPerLane: configuration.limits.hashQueueLength)
        placeholderHash = try configuration.passwordHasher.hash(LiveFormSessionRegistry.makeRandomID())
    }
}
