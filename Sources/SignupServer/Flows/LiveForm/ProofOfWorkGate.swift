import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// The proof of work a sign-up pays: challenges minted for each form at the client's price,
/// and the `altcha` field checked on submit (signature, expiry, form, price, single use
/// across instances). A post without one is a person without JavaScript, served from a
/// global budget of its own.
struct ProofOfWorkGate: Sendable {
    let authority: ProofOfWorkAuthority
    let pricing: ProofOfWorkPricing
    let store: any AccountStore
    /// `--no-javascript-signups`: plain posts without a proof, all clients together.
    let withoutJavaScript: RateLimiter
    let metrics: ServerMetrics
    let logger: Logger
    let now: @Sendable () -> Date

    /// The form field the solution comes in (as the ALTCHA widget names it).
    static let field = "altcha"
    /// The key the budget without JavaScript is counted under: one for everybody.
    static let everybody = "all"

    var settings: ProofOfWorkSettings { pricing.settings }

    /// A challenge for `token` at what `addressKey` pays now.
    func challenge(for token: String, addressKey: String) -> ProofOfWorkChallenge {
        let level = pricing.level(forAddressKey: addressKey)
        metrics.proofChallenge(level: level)
        return authority.challenge(for: token, maxNumber: settings.cost(level: level),
                                   expiresAt: now().addingTimeInterval(settings.lifetime))
    }

    enum Verdict: Equatable {
        /// Solved, unused, at the price: the sign-up goes on.
        case proved
        /// No proof, within the budget for people without JavaScript.
        case withoutJavaScript
    }

    enum Refusal: Error, Equatable {
        case proof(ProofOfWorkRefusal)
        /// No proof, and the budget without JavaScript is spent.
        case overBudget(LimitExceeded)
        /// The store could not say whether the proof was used before.
        case storeUnavailable
    }

    /// Checks a sign-up's proof; spends it when it passes (so it is single use even if the
    /// rest of the sign-up then fails). `issuedAt` is when the form's page was served.
    /// `withoutProof`: the budget a post without a proof draws from, when not sign-ups' own
    /// (`withoutJavaScript`): recoveries have theirs.
    func check(_ field: String?, token: String, addressKey: String, issuedAt: Date?,
               withoutProof budget: RateLimiter? = nil) throws(Refusal) -> Verdict {
        let now = now()
        // A hasty form raises what the next ones cost, not its own: recorded once this one is judged.
        defer {
            if let issuedAt, now.timeIntervalSince(issuedAt) < settings.plausibleSeconds {
                pricing.record(.implausiblyFast, addressKey: addressKey)
            }
        }
        guard let field, !field.isEmpty else {
            do throws(LimitExceeded) {
                try (budget ?? withoutJavaScript).admit(Self.everybody)
            } catch {
                metrics.proof("missing_over_budget")
                throw .overBudget(error)
            }
            metrics.proof("missing")
            return .withoutJavaScript
        }
        let proof: VerifiedProof
        switch authority.verify(field, formToken: token, now: now) {
        case .success(let verified): proof = verified
        case .failure(let refusal): throw refused(refusal)
        }
        // Spent before the price is compared, so a replay is called a replay.
        let isFirstUse: Bool
        do {
            isFirstUse = try store.spendProof(proof.challenge, until: proof.expiresAt)
        } catch {
            logger.error("Account store unavailable while spending a proof of work", metadata: ["error": "\(error)"])
            throw .storeUnavailable
        }
        guard isFirstUse else { throw refused(.replayed) }
        // One level of lag: the price may have risen while the person typed.
        let required = pricing.cost(forAddressKey: addressKey)
        guard proof.cost.multipliedReportingOverflow(by: max(1, settings.levelFactor)).partialValue >= required else {
            throw refused(.tooCheap)
        }
        metrics.proof("accepted")
        return .proved
    }

    private func refused(_ refusal: ProofOfWorkRefusal) -> Refusal {
        metrics.proof(refusal.rawValue)
        logger.info("Refused a sign-up's proof of work", metadata: ["reason": "\(refusal.rawValue)"])
        return .proof(refusal)
    }
}

extension ProofOfWorkGate.Refusal {
    /// The refusal as JSON, for a program that asked for it (`Accept: application/json`):
    /// `proof_refused` or `proof_stale` with the `reason`, `rate_limited` with `limit`
    /// "no_javascript", or `unavailable`; `message` is the page's sentence.
    func json(message: String) -> HTTPResponse {
        switch self {
        case .overBudget(let exceeded):
            return APIError(status: .tooManyRequests, code: "rate_limited", message: message,
                            limit: exceeded.limit.rawValue, retryAfter: exceeded.retryAfterSeconds).response
        case .storeUnavailable:
            var error = APIError(status: .serviceUnavailable, code: "unavailable", message: message)
            error.retryAfter = 10
            return error.response
        case .proof(let reason):
            return APIError(status: reason.status, code: reason.isStale ? "proof_stale" : "proof_refused",
                            message: message, reason: reason.rawValue).response
        }
    }
}

extension RequestContext {
    /// What a refused proof says, in the sign-up's words (`error.*`, "nothing was saved") or the
    /// sign-in's (`signin.*`, also the code form's). A spent budget is counted here, once.
    func proofRefusalMessage(_ refusal: ProofOfWorkGate.Refusal, signingIn: Bool, refusals: Refusals) -> String {
        switch refusal {
        case .overBudget(let exceeded):
            refusals.count(exceeded)
            return text(signingIn ? "signin.no_javascript" : "error.no_javascript", ["wait": .text(waitPhrase(exceeded.retryAfterSeconds))])
        case .storeUnavailable:
            return text(signingIn ? "signin.unavailable" : "error.unavailable")
        case .proof(let reason):
            return text(signingIn ? (reason.isStale ? "signin.proof_stale" : "signin.proof_refused") : reason.textKey)
        }
    }
}

extension ProofOfWorkRefusal {
    /// Whether a fresh challenge is all it takes (the page that comes back has one).
    var isStale: Bool { self == .expired || self == .tooCheap }

    /// The status a refused proof is answered with: 400 for what no browser sends, 403 for
    /// a proof that is not this form's to use, 409 for one the server's state overtook (the
    /// page that comes back carries a fresh challenge).
    var status: HTTPStatus {
        switch self {
        case .malformed: .badRequest
        case .forged, .foreignForm, .replayed: .forbidden
        case .expired, .tooCheap: .conflict
        }
    }

    /// The catalog text the sign-up page says it with.
    var textKey: String { isStale ? "error.proof_stale" : "error.proof_refused" }
}
