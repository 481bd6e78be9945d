import Foundation
import Identity
import MicroHTTPD
import WebKernel

/// The site a request meets: its pages in each language, this site's own origins and the
/// ones it may send people back to, where a request comes from, and the limits every
/// request is held to.
struct SiteServices: Sendable {
    let languages: Languages
    let renderer: PageRenderer
    let assets: StaticAssets
    /// The pages in English; each request carries its own in the visitor's language.
    let pages: Pages
    let addresses: ClientAddressResolver
    /// This site's origins as configured (`--public-origin`), normalised; the first one is
    /// where links in mails and the providers' redirects point.
    let publicOrigins: [String]
    let sameOrigin: SameOriginPolicy
    let returnTo: ReturnTo
    let limiters: ClientLimiters
    let refusals: Refusals
    /// Whether cookies carry `Secure`: asked for, or implied by an https public origin
    /// (a site served over TLS must never send its cookies in clear).
    let secureCookies: Bool
    private let server: WeakServer
    private let host: String
    private let port: UInt16

    init(_ core: Services.Core) throws {
        let configuration = core.configuration, policy = core.policy, metrics = core.metrics
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

        addresses = ClientAddressResolver(trustedProxies: configuration.trustedProxies)
        publicOrigins = try SiteOrigin.normalized(configuration.publicOrigins, setting: "--public-origin")
        sameOrigin = SameOriginPolicy(publicOrigins: publicOrigins, addresses: addresses)
        returnTo = ReturnTo(allowedOrigins: Set(try SiteOrigin.normalized(configuration.returnToOrigins, setting: "--return-to-allow")),
                            sameOrigin: sameOrigin)
        secureCookies = configuration.secureCookies || publicOrigins.contains { $0.hasPrefix("https://") }
        limiters = ClientLimiters(configuration.limits, store: core.store, logger: core.logger, now: core.now,
                                  consulted: core.consulted)
        refusals = Refusals(countLimited: { metrics.rateLimited($0) }, logger: core.logger)
        server = core.server
        host = configuration.host
        port = configuration.port
    }

    /// This site's own origin for addresses it hands out: the first public origin, else the
    /// listening address (the port once the server has one), with a wildcard listening host
    /// read as `wildcardAs`.
    func ownOrigin(wildcardAs: String) -> @Sendable () -> String {
        let configured = publicOrigins.first, server = server, port = port
        let host = ["0.0.0.0", "::", "127.0.0.1", "::1"].contains(host) ? wildcardAs : host
        return { configured ?? "http://\(host):\(port == 0 ? server.server?.port ?? 0 : port)" }
    }
}
