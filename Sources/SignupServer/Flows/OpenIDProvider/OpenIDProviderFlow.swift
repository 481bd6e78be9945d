import Identity
import MicroHTTPD
import WebKernel

/// LiveSignup as the OpenID provider of the operator's applications (issue 56): discovery,
/// the key set, the authorization endpoint (the person's side: LiveSignup's own sign-in and
/// sign-up pages), and the endpoints applications and resource servers call.
enum OpenIDProviderFlow: Flow {
    static let pages: [any PageView.Type] = [ConsentPage.self, LogoutPage.self]

    /// Where each endpoint is; discovery names them from here.
    enum Path {
        static let discovery = "/.well-known/openid-configuration"
        static let keySet = "/.well-known/jwks.json"
        static let authorize = "/oauth2/authorize"
        static let consent = "/oauth2/consent"
        static let logout = "/oauth2/logout"
        static let revokeApplication = "/account/applications/revoke"
        static let token = "/oauth2/token"
        static let userinfo = "/oauth2/userinfo"
        static let revoke = "/oauth2/revoke"
        static let introspect = "/oauth2/introspect"
    }

    static func routes(_ services: Services) -> [Route] {
        let keys = services.openID.signingKeys
        let authorize = AuthorizeRoutes(services)
        let tokens = TokenRoutes(services)
        let applications = ApplicationRoutes(services)
        let logout = LogoutRoutes(services)
        let server = services.openID.server
        let discovery = DiscoveryDocument(issuer: server.issuer, languages: services.site.languages.all.map(\.tag),
                                          algorithms: SigningKeys.algorithms(for: Array(server.declarations.values)))
        return [
            Route(.get, Path.discovery, answers: .json, limits: [.pages], spentFirst: [.pages]) { _ in discovery.response() },
            // The key set relying parties verify ID tokens with: public, cached briefly (a
            // rotated key is published a day before it signs, so a cache never misses one).
            Route(.get, Path.keySet, answers: .json, limits: [.pages], spentFirst: [.pages]) { _ in
                var response = HTTPResponse(status: .ok, contentType: "application/json", body: try keys.keySet())
                response.headers.add("Cache-Control", "public, max-age=300")
                return response
            },
            // The code travels back in the application's redirect: never in a Referer.
            Route(.get, Path.authorize, answers: .page, limits: [.pages], spentFirst: [.pages], sendsNoReferrer: true,
                  signedIn: true) { try authorize.authorize($0) },
            // The person's answer on the consent page: a same-site form, signed in.
            Route(.post, Path.consent, answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages],
                  forAccount: { try authorize.consent($0, $1) }),
            // RP-initiated logout: asked (or, with this session's own ID token, done at once),
            // then confirmed by a same-site form.
            Route(.get, Path.logout, answers: .page, limits: [.pages], spentFirst: [.pages], signedIn: true) { try logout.ask($0) },
            Route(.post, Path.logout, answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages], signedIn: true) {
                try logout.confirm($0)
            },
            // The account page's list of applications: one withdrawn, and signed out of.
            Route(.post, Path.revokeApplication, answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages],
                  forAccount: { try applications.revoke($0, $1) }),
            // Applications call these from their servers; each proves itself in the request.
            Route(.post, Path.token, answers: .json, reads: .form, limits: [.tokens], spentFirst: [.tokens],
                  acceptsCrossSite: true) { tokens.token($0) },
            Route(.get, Path.userinfo, answers: .json, limits: [.tokens], spentFirst: [.tokens]) { try tokens.userinfo($0) },
            Route(.post, Path.userinfo, answers: .json, reads: .form, limits: [.tokens], spentFirst: [.tokens],
                  acceptsCrossSite: true) { try tokens.userinfo($0) },
            Route(.post, Path.revoke, answers: .json, reads: .form, limits: [.tokens], spentFirst: [.tokens],
                  acceptsCrossSite: true) { tokens.revoke($0) },
            Route(.post, Path.introspect, answers: .json, reads: .form, limits: [.tokens], spentFirst: [.tokens],
                  acceptsCrossSite: true) { tokens.introspect($0) },
        ]
    }

    /// Keys no token alive names are forgotten, and grants whose tokens have all expired.
    static func sweeps(_ services: Services) -> [Sweep] {
        let keys = services.openID.signingKeys, store = services.store, server = services.openID.server
        let logouts = services.openID.backchannelLogouts
        return [
            Sweep(what: "signing keys past their tokens") { _ in try keys.forgetExpired() },
            Sweep(what: "expired OpenID grants") { time in try store.removeExpiredGrants(at: time) },
            // After the signed-in sessions' sweep (the login flow's, earlier in the list): an
            // application is signed out with the session it came through.
            Sweep(what: "OpenID grants of ended sessions") { _ in
                let ended = try server.endGrantsOfEndedSessions()
                if ended > 0 { logouts?.nudge() }
                return ended
            },
        ]
    }
}
