import Foundation
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// The one place a signed-in session is issued, and so the one place that decides whether a
/// second step comes first (issue 52). Every way in hands over here once its own proof is
/// done: a password, a passkey, a provider, a mailed recovery, a new account (signed up, or
/// its address proved), and the second step itself. `SignedInUsers.signIn` is called nowhere
/// else (`SignInFunnelTests` reads the sources to keep it so): the rule below cannot drift
/// from one route to another again, as `second_factor: required` once skipped two of them.
package struct SignInFunnel: Sendable {
    package let signedIn: SignedInUsers
    package let store: any AccountStore
    package let logger: Logger
    /// What the person proved before reaching the funnel.
    package enum Proof: Equatable, Sendable {
        case password
        /// A passkey assertion; `userVerified`: the authenticator checked the person (a PIN, a
        /// fingerprint), which makes it two factors by itself.
        case passkey(userVerified: Bool)
        /// An OpenID Connect provider's ID token: one factor, whatever the provider asked.
        case provider
        /// A mailed code or link (a recovery): the mailbox, one factor.
        case mailbox
        /// A new account: signed up (with a password, a passkey or a provider), or its address
        /// proved after the sign-up.
        case newAccount
        /// The second step's code (the app's, a recovery code, or the first code of a setup).
        case secondFactor

        /// Two factors in one: only a passkey assertion that verified the person, or the
        /// second step that followed a first factor.
        package var isBothFactors: Bool {
            switch self {
            case .passkey(let verified): verified
            case .secondFactor: true
            case .password, .provider, .mailbox, .newAccount: false
            }
        }

        /// Whether the session opens sensitive changes at once (`authenticated_at`): every
        /// proof but a passkey that only showed it was there.
        package var provesThePerson: Bool { self != .passkey(userVerified: false) }

        /// How it was proved, as RFC 8176 names methods: the `amr` of the ID tokens the
        /// session's applications receive (issue 56). A new account's sign-up proof is not
        /// known here, so it claims none; the second step's first factor is not carried
        /// through the step, so it says the code and that there were two.
        package var methods: [String] {
            switch self {
            case .password: ["pwd"]
            case .passkey(let verified): verified ? ["hwk", "user", "mfa"] : ["hwk"]
            case .provider: ["fed"]
            case .mailbox: ["otp"]
            case .newAccount: []
            case .secondFactor: ["otp", "mfa"]
            }
        }
    }

    /// What the funnel did.
    package enum Outcome {
        /// No session: the second step's cookie and the redirect to its page.
        case secondStep(HTTPResponse)
        /// A session: the `Set-Cookie` values that carry it.
        case signedIn([String])
    }

    package let gate: SecondStepGate

    package init(gate: SecondStepGate, signedIn: SignedInUsers, store: any AccountStore, logger: Logger) {
        self.gate = gate
        self.signedIn = signedIn
        self.store = store
        self.logger = logger
    }

    /// Whether `account`, having shown `proof`, must take the second step: never after both
    /// factors; always when its factor is on; and under `required`, for every account
    /// (password, passkey-only or provider-made), which then sets a factor up at the step.
    package func needsSecondStep(_ account: Account, proof: Proof) throws -> Bool {
        guard !proof.isBothFactors else { return false }
        if gate.rule == .required { return true }
        return try store.secondFactor(ofAccount: account.id)?.isEnabled == true
    }

    /// The second step or a session for `account` (its session cookie, if any, ended first).
    /// - Parameter returnTo: where the step's success leads (nil: the request's own target).
    package func finish(_ account: Account, proved proof: Proof, _ request: RequestContext, returnTo: String?? = nil) throws -> Outcome {
        if try needsSecondStep(account, proof: proof) {
            return .secondStep(gate.start(for: account, request, returnTo: returnTo ?? request.returnTarget))
        }
        return .signedIn(try signedIn.signIn(account, replacing: request.cookieHeader, from: request.signInOrigin,
                                             verified: proof.provesThePerson, methods: proof.methods))
    }
}
