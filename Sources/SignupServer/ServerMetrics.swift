import Foundation
import Identity
import MicroHTTPD
import OutsideDNS
import SignupLookups
import Metrics
import SignupDomain
import WebKernel
import Locking

/// What operators' dashboards read, through swift-metrics (so any backend works; the
/// executable bootstraps Prometheus). Names and labels are a public contract (docs/OPERATIONS.md, "Metrics").
/// Handlers are made once and reused: an increment on the hot path is one atomic add.
final class ServerMetrics: Sendable {
    let formSessions = Gauge(label: "livesignup_form_sessions")
    let eventStreams = Gauge(label: "livesignup_event_streams")
    let edits = Counter(label: "livesignup_edits_total")
    let eventsSent = Counter(label: "livesignup_events_sent_total")
    let availabilityChecks = Counter(label: "livesignup_availability_checks_total")
    /// Breach look-ups by result: `found`, `not_found`, `source_failed` (the built-in list
    /// answered instead: watch this one when the range API is used).
    let breachLookups = ["found", "not_found", "source_failed"].reduce(into: [String: Counter]()) {
        $0[$1] = Counter(label: "livesignup_breach_lookups_total", dimensions: [("result", $1)])
    }

    func breachLookup(_ verdict: BreachVerdict, sourceFailure: BreachedPasswordError?) {
        breachLookups[sourceFailure != nil ? "source_failed" : (verdict == .notFound ? "not_found" : "found")]?.increment()
        if let sourceFailure { upstreamFailure("breached_passwords", reason: sourceFailure.reason) }
    }

    /// DNS questions about email domains by result: `accepts_mail`, `null_mx`,
    /// `no_mail_host`, `no_such_domain`, `failed` (no verdict: the address was let through).
    let mailDomainLookups = ["accepts_mail", "null_mx", "no_mail_host", "no_such_domain", "failed"]
        .reduce(into: [String: Counter]()) {
            $0[$1] = Counter(label: "livesignup_email_dns_lookups_total", dimensions: [("result", $1)])
        }

    func mailDomainLookup(_ check: MailDomainCheck) {
        mailDomainLookups[check.label]?.increment()
        if case .failed(let failure) = check { upstreamFailure("email_dns", reason: failure.reason) }
    }

    /// Sign-ups' proofs of work by result: `accepted`, `missing` (no JavaScript, within its
    /// budget), `missing_over_budget`, and each `ProofOfWorkRefusal`.
    private let proofs = (["accepted", "missing", "missing_over_budget"] + ProofOfWorkRefusal.allCases.map(\.rawValue))
        .reduce(into: [String: Counter]()) {
            $0[$1] = Counter(label: "livesignup_proofs_total", dimensions: [("result", $1)])
        }
    /// Challenges minted by price level (0 is the base price).
    private let proofChallenges = (0...8).map {
        Counter(label: "livesignup_proof_challenges_total", dimensions: [("level", String($0))])
    }

    func proof(_ result: String) { proofs[result]?.increment() }

    func proofChallenge(level: Int) { proofChallenges[min(max(level, 0), proofChallenges.count - 1)].increment() }

    /// Passkey ceremonies by ceremony (`register` on the sign-up form, `signin`, `add` to an
    /// account) and result: `accepted`, or the refusal's reason (`PasskeyRefusal.reasons`).
    private let passkeys = PasskeyRoutes.Ceremony.allCases.reduce(into: [PasskeyRoutes.Ceremony: [String: Counter]]()) { all, ceremony in
        all[ceremony] = (["accepted"] + PasskeyRefusal.reasons).reduce(into: [String: Counter]()) {
            $0[$1] = Counter(label: "livesignup_passkeys_total", dimensions: [("ceremony", ceremony.rawValue), ("result", $1)])
        }
    }

    func passkey(_ ceremony: PasskeyRoutes.Ceremony, _ result: String) { passkeys[ceremony]?[result]?.increment() }

    /// The outbox's deliveries and backlog (mails, webhooks), counted by the identity services.
    let outboxes = OutboxMetrics()

    /// Each flow's outcomes, named by the flow (`SignupOutcome`, `SignInOutcome`,
    /// `VerificationOutcome`, `RecoveryOutcome`): a counter per outcome, made here at start.
    private let verifications = OutcomeCounters<VerificationOutcome>("livesignup_verifications_total")
    private let recoveries = OutcomeCounters<RecoveryOutcome>("livesignup_recoveries_total")
    private let signups = OutcomeCounters<SignupOutcome>("livesignup_signups_total")
    private let signins = OutcomeCounters<SignInOutcome>("livesignup_signins_total")
    func verification(_ outcome: VerificationOutcome) { verifications.count(outcome) }
    func recovery(_ outcome: RecoveryOutcome) { recoveries.count(outcome) }
    func signup(_ outcome: SignupOutcome) { signups.count(outcome) }
    func signin(_ outcome: SignInOutcome) { signins.count(outcome) }

    /// Clients that went away mid-request or mid-answer (a closed tab, a lost signal), as
    /// libmicrohttpd reports them: normal on the web, so counted here and logged at debug.
    let clientDisconnects = Counter(label: "livesignup_client_disconnects_total")

    /// Answers from outside the process refused or missing, by dependency and reason
    /// (`busy`, `too_large`, `timeout`, `status`, `unreachable`, `garbage`), made on first use.
    private let upstreamFailures = Locked<[String: Counter]>([:])

    func upstreamFailure(_ upstream: String, reason: String) {
        let counter = upstreamFailures.withLock { counters in
            if let known = counters[upstream + " " + reason] { return known }
            let made = Counter(label: "livesignup_upstream_failures_total", dimensions: [("upstream", upstream), ("reason", reason)])
            counters[upstream + " " + reason] = made
            return made
        }
        counter.increment()
    }
    let passwordHashDuration = Metrics.Timer(label: "livesignup_password_hash_duration_seconds",
                                             preferredDisplayUnit: .seconds)

    private let rateLimitedByLimit: [RateLimitName: Counter]
    /// Request timers by "route status", made on first use.
    private let requestTimers = Locked<[RequestTimerKey: Metrics.Timer]>([:])

    /// A request timer's dimensions as they are: a key made by interpolating them cost a
    /// string per request.
    private struct RequestTimerKey: Hashable {
        let route: String
        let status: Int
    }

    static let limits = RateLimitName.allCases

    init() {
        rateLimitedByLimit = Dictionary(uniqueKeysWithValues: Self.limits.map {
            ($0, Counter(label: "livesignup_rate_limited_total", dimensions: [("limit", $0.rawValue)]))
        })
    }

    /// Sign-ins, sign-ups and links through an OpenID provider (issue 45), by the provider's
    /// configured id and what came of it: `started`, `signed_in`, `second_factor`,
    /// `signup_form`, `signed_up`, `link_offered`, `linked`, `unlinked`, `confirmed`,
    /// `cancelled`, `refused`, `state`, `expired`, `unverified_email`, `needs_proof`,
    /// `linked_elsewhere`, `disabled`, `unavailable`, `unknown`, or an ID token's or the
    /// provider's failure (`OpenIDError.reason`: `unreachable`, `bad_signature`, `wrong_nonce`, …).
    /// Both labels come from fixed sets (the ids from the policy file), so the series are bounded.
    func provider(_ id: String, _ outcome: String) {
        Counter(label: "livesignup_provider_signins_total", dimensions: [("provider", id), ("result", outcome)]).increment()
    }
    func rateLimited(_ limit: RateLimitName) { rateLimitedByLimit[limit]?.increment() }

    /// What LiveSignup as an OpenID provider did for an application (issue 56), by its
    /// configured `client` id (`unknown` for any other: the labels stay a fixed set) and
    /// `result`: `code` (a code given), `consent_allowed`, `consent_denied`, `tokens` (a code
    /// redeemed), `refreshed`, or the token endpoint's refusal (`invalid_client`,
    /// `invalid_grant`, `invalid_request`, `unsupported_grant_type`), `revoked` (withdrawn on
    /// the account page), `logout` (signed out through it).
    func openID(_ client: String, _ result: String) {
        Counter(label: "livesignup_openid_total", dimensions: [("client", client), ("result", result)]).increment()
    }

    /// Records one request's duration under its route (a fixed set, never the raw path) and status.
    func request(route: String, status: Int, seconds: Double) {
        let key = RequestTimerKey(route: route, status: status)
        let timer = requestTimers.withLock { timers in
            if let timer = timers[key] { return timer }
            let timer = Metrics.Timer(label: "livesignup_http_request_duration_seconds",
                                      dimensions: [("route", route), ("status", String(status))],
                                      preferredDisplayUnit: .seconds)
            timers[key] = timer
            return timer
        }
        timer.recordNanoseconds(Int64(seconds * 1_000_000_000))
    }
}

/// One counter per outcome of a flow's metric (`livesignup_signups_total{result=…}`), all made
/// at start so an increment is one atomic add and no label is ever made up at run time.
struct OutcomeCounters<Outcome: RawRepresentable & CaseIterable & Hashable & Sendable>: Sendable
where Outcome.RawValue == String {
    private let counters: [Outcome: Counter]

    init(_ label: String) {
        counters = Dictionary(uniqueKeysWithValues: Outcome.allCases.map {
            ($0, Counter(label: label, dimensions: [("result", $0.rawValue)]))
        })
    }

    func count(_ outcome: Outcome) { counters[outcome]?.increment() }
}
