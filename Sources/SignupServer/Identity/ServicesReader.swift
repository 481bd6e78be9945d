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
    var lookups: Lookups { services.lookups }
    var logger: Logger { services.logger }
    var metrics: ServerMetrics { services.metrics }
    var limiters: ClientLimiters { services.limiters }
    var refusals: Refusals { services.refusals }
    var availability: StoreAvailabilityChecker { services.availability }
    var sessions: LiveFormSessionRegistry { services.sessions }
    var hashing: PasswordHashingQueue { services.hashing }
    var placeholderHash: String { services.placeholderHash }
    var sameOrigin: SameOriginPolicy { services.sameOrigin }
    var returnTo: ReturnTo { services.returnTo }
    var signedIn: SignedInUsers { services.signedIn }
    var proofOfWork: ProofOfWorkGate? { services.proofOfWork }
    var webhooks: OutboxDelivery? { services.webhooks }
    var proofs: AddressProofs? { services.proofs }
    var secondFactorRule: SecondFactorRule { services.secondFactorRule }
    var providers: [String: ConfiguredProvider] { services.providers }
    var providerCookies: ProviderCookies { services.providerCookies }
    var now: @Sendable () -> Date { services.now }
}
