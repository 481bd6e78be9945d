import Foundation
import Identity
import OpenIDConnect
import OutsideHTTP
import WebKernel

/// The OpenID providers people may sign up and sign in through (issue 45): each its own
/// bounded client (a slow one pauses alone), the secret from the environment (never the
/// policy file), and one redirect URI, this site's own.
struct ProviderServices: Sendable {
    /// By the provider's id.
    let byID: [String: ConfiguredProvider]
    let cookies: ProviderCookies
    /// Where providers send people back: the first `--public-origin`, else the listening address.
    let redirectURI: @Sendable () -> URL

    init(_ core: Services.Core, _ site: SiteServices, _ signIn: SignInServices) throws {
        let configuration = core.configuration
        var byID: [String: ConfiguredProvider] = [:]
        for declaration in core.policy.settings.providers {
            guard let secret = configuration.providerClientSecrets[declaration.id], !secret.isEmpty else {
                throw ConfigurationError("The provider '\(declaration.id)' needs its client secret in the environment variable \(declaration.clientSecretVariable) (or \(declaration.clientSecretVariable)_FILE, or providers.client_secret_files.\(declaration.id) in the configuration file), which is not set.")
            }
            let fetcher = BoundedHTTPFetcher(limits: configuration.providerFetchLimits,
                                             headers: ["Accept": "application/json", "User-Agent": "LiveSignup"], now: core.now)
            byID[declaration.id] = ConfiguredProvider(
                declaration: declaration,
                client: OpenIDProvider(settings: .init(issuer: declaration.issuer, clientID: declaration.clientID,
                                                       clientSecret: secret, scopes: declaration.scopes,
                                                       endpointHosts: Set(declaration.endpointHosts)),
                                       fetcher: fetcher, now: core.now))
        }
        self.byID = byID
        cookies = ProviderCookies(
            key: try core.key(configuration.providerCookieKey, named: "provider-cookie-key", saying: "provider cookie",
                              make: ProviderCookies.makeKey),
            secure: signIn.users.secureCookies, now: core.now)
        let origin = site.ownOrigin(wildcardAs: "127.0.0.1")
        redirectURI = { URL(string: origin() + ProviderRoutes.callbackPath)! }
    }
}
