import Foundation
import Identity
import SignupDomain
import WebKernel

/// LiveSignup as the OpenID provider of the operator's applications (issue 56): the keys it
/// signs with and publishes, the applications (the policy's `clients`, each confidential
/// one's secret from its variable), and the codes and tokens it issues them.
struct OpenIDProviderServices: Sendable {
    let signingKeys: SigningKeys
    let server: AuthorizationServer
    /// Back-channel logouts to the applications that registered for them, through the outbox.
    let backchannelLogouts: OutboxDelivery?

    init(_ core: Services.Core, _ site: SiteServices, _ signIn: SignInServices) throws {
        let configuration = core.configuration, store = core.store
        signingKeys = SigningKeys(store: store, tokenLifetime: SigningKeys.defaultTokenLifetime, now: core.now)
        try signingKeys.ensureKeys(SigningKeys.algorithms(for: configuration.policy.settings.clients))
        var clients: [RegisteredClient] = []
        for declaration in configuration.policy.settings.clients {
            let secret = configuration.clientSecrets[declaration.id]
            if let problem = declaration.problem(withSecret: secret) { throw ConfigurationError(problem) }
            clients.append(RegisteredClient(declaration: declaration, secret: declaration.isPublic ? nil : secret))
        }
        server = AuthorizationServer(
            // "This site" from configuration, never from a request's Host: the issuer is what
            // every application compares tokens against.
            store: store, signingKeys: signingKeys, clients: clients, issuer: site.ownOrigin(wildcardAs: "127.0.0.1"),
            subjectKey: try core.key(nil, named: "openid-subject-key", saying: "OpenID subject", length: 32,
                                     make: { (0..<32).map { _ in UInt8.random(in: 0...255) } }),
            now: core.now)
        backchannelLogouts = clients.contains { $0.declaration.backchannelLogoutURI != nil }
            ? OutboxDelivery(channel: .backchannelLogout, schedule: BackchannelLogoutCourier.schedule,
                             courier: BackchannelLogoutCourier(server: server), store: store, metrics: core.metrics.outboxes,
                             logger: core.logger, clock: core.clock)
            : nil
    }
}
