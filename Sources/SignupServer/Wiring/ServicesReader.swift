import Clocks
import Foundation
import Identity
import Logging
import MicroHTTPD
import OpenIDConnect
import SignupDomain
import WebKernel

/// A handler or a service made from the app's `Services` that reads them by their own names
/// (`store`, `logger`, `metrics`, …) rather than copying each into a field of its own: the
/// names are listed once, here, instead of once per handler (as Ory Kratos' handlers hold
/// the registry behind the few providers they name). A handler keeps its own fields only for
/// what it makes itself (`SignInFunnel(services)`) or names differently.
protocol ServicesReader {
    var services: Services { get }
}

extension ServicesReader {
    var store: any AccountStore { services.store }
    var policy: FormPolicy { services.policy }
    var lookups: Lookups { services.core.lookups }
    var logger: Logger { services.logger }
    var metrics: ServerMetrics { services.metrics }
    var limiters: ClientLimiters { services.site.limiters }
    var refusals: Refusals { services.site.refusals }
    var availability: StoreAvailabilityChecker { services.form.availability }
    var sessions: LiveFormSessionRegistry { services.form.sessions }
    var hashing: PasswordHashingQueue { services.form.hashing }
    var placeholderHash: String { services.form.placeholderHash }
    var sameOrigin: SameOriginPolicy { services.site.sameOrigin }
    var returnTo: ReturnTo { services.site.returnTo }
    var signedIn: SignedInUsers { services.signIn.users }
    var proofOfWork: ProofOfWorkGate? { services.form.proofOfWork }
    /// The sign-up funnel's counts (issue 59).
    var formFunnel: FormFunnel { services.form.funnel }
    var webhooks: OutboxDelivery? { services.outbox.webhooks }
    var proofs: AddressProofs? { services.outbox.proofs }
    var secondFactorRule: SecondFactorRule { services.signIn.secondFactorRule }
    var providers: [String: ConfiguredProvider] { services.providerSignIn.byID }
    var providerCookies: ProviderCookies { services.providerSignIn.cookies }
    var now: @Sendable () -> Date { services.now }
}
