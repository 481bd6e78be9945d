import Identity
import MicroHTTPD
import WebKernel

/// Login: the sign-in form and its methods (password, passkey, provider), the second step, the
/// welcome page, signing out, and nginx's `auth_request` question.
/// Its rows are its own; the router's table is every flow's rows (`Router.table`).
enum LoginFlow: Flow {
    /// The pages it shows (their templates are checked at start).
    static let pages: [any PageView.Type] = [SignInPage.self, WelcomePage.self, SecondFactorPage.self]

    /// A signed-in session is kept until it expires or has been idle too long.
    static func sweeps(_ services: Services) -> [Sweep] {
        let signedIn = services.signIn.users
        return [Sweep(what: "ended signed-in sessions") { _ in try signedIn.removeEnded() }]
    }

    /// Its rows, their handlers made once from the services the server started with.
    static func routes(_ services: Services) -> [Route] {
        let signIn = SignInRoutes(services)
        let secondFactor = SecondFactorRoutes(services)
        let passkeys = PasskeyRoutes(services)
        let providers = ProviderRoutes(services)
        return [
            Route(.get, "/welcome", answers: .page, limits: [.pages], spentFirst: [.pages], signedIn: true) { signIn.welcome($0) },
            Route(.get, "/signin/second-factor", answers: .page, limits: [.pages], spentFirst: [.pages]) {
                try secondFactor.signInPage($0)
            },
            Route(.post, "/signin/second-factor", answers: .page, reads: .form, limits: [.signins], outcome: .signin) {
                try secondFactor.signIn($0)
            },
            Route(.get, "/signin", answers: .page) { signIn.signInForm($0) },
            Route(.post, "/signin", answers: .page, reads: .form, limits: [.signins, .noJavaScript, .hashing], outcome: .signin) {
                signIn.signIn($0)
            },
            // A cookie that names no live session is counted per address, as on /auth; a live one
            // never counts, so a person can always sign out.
            Route(.post, "/signout", answers: .page, limits: [.unknownSessions]) { signIn.signOut($0) },
            Route(.post, "/passkeys/signin/options", answers: .json, limits: [.pages], spentFirst: [.pages]) {
                passkeys.signInOptions($0)
            },
            Route(.post, "/passkeys/signin", answers: .json, reads: .form, limits: [.passkeys, .signins], spentFirst: [.passkeys],
                  outcome: .signin) { passkeys.signIn($0) },
            // Issue 45: OpenID Connect providers. The callback carries a code: never in a Referer.
            Route(.post, "/signin/provider", answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages]) {
                providers.start($0)
            },
            Route(.get, "/signin/provider/callback", answers: .page, limits: [.pages], spentFirst: [.pages], sendsNoReferrer: true) {
                providers.callback($0)
            },
            Route(.get, "/auth", answers: .json, limits: [.unknownSessions]) { signIn.forwardAuth($0) },
        ]
    }
}
