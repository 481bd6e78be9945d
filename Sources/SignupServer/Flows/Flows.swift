import Foundation
import Identity
import MicroHTTPD
import SignupDomain
import WebKernel

extension Router {
    /// Every flow the server runs (Flows/<flow>/<Flow>Flow.swift).
    static let flows: [any Flow.Type] = [LiveFormFlow.self, RegistrationFlow.self, LoginFlow.self, RecoveryFlow.self,
                                         SettingsFlow.self, OpenIDProviderFlow.self, OperationsFlow.self]

    /// The templates every flow's pages use.
    static let pageTemplates = flows.flatMap { $0.pages.map { $0.template } }

    /// The router of every flow's rows, with the services it reads before and after them.
    init(_ services: Services) {
        let metrics = services.metrics
        self.init(table: RouteTable(Self.flows.flatMap { $0.routes(services) }), pages: services.site.pages,
                  maxBodyBytes: services.configuration.maxBodyBytes, addresses: services.site.addresses,
                  sameOrigin: services.site.sameOrigin, limiters: services.site.limiters, refusals: services.site.refusals,
                  returnTo: services.site.returnTo,
                  signedIn: SignedInReader(signedIn: services.signIn.users, recent: services.signIn.recent),
                  metrics: RouterMetrics(request: { metrics.request(route: $0, status: $1, seconds: $2) },
                                         refusedCrossSite: { outcome in
                                             switch outcome {
                                             case .signup: metrics.signup(.refused)
                                             case .signin: metrics.signin(.refused)
                                             }
                                         }),
                  logger: services.logger,
                  accessLines: services.configuration.accessLines ?? LoggerAccessLines(logger: services.logger))
    }
}

/// The identity services' answers to the router's questions about the signed-in person.
struct SignedInReader: SignedInReading {
    let signedIn: SignedInUsers
    let recent: RecentSignIn

    func account(cookieHeader: String?) throws -> Account? {
        try signedIn.account(cookieHeader: cookieHeader)
    }

    func openUntil(for account: Account, cookieHeader: String?) throws -> Date? {
        try recent.openUntil(for: account, cookieHeader: cookieHeader)
    }
}
