import MicroHTTPD

/// Login: the sign-in form and its methods (password, passkey, provider), the second step, the
/// welcome page, signing out, and nginx's `auth_request` question.
/// Its rows are its own; the router's table is every flow's rows (`Router.table`).
enum LoginFlow: Flow {
    /// The pages it shows (their templates are checked at start).
    static let pages: [any PageView.Type] = [SignInPage.self, WelcomePage.self, SecondFactorPage.self]

    static let routes: [Route] = [
        Route(.get, "/welcome", answers: .page, limits: [.pages], spentFirst: [.pages], signedIn: true) { $0.signIn.welcome($1) },
        Route(.get, "/signin/second-factor", answers: .page, limits: [.pages], spentFirst: [.pages]) {
            $0.secondFactor.signInPage($1)
        },
        Route(.post, "/signin/second-factor", answers: .page, reads: .form, limits: [.signins], outcome: .signin) {
            $0.secondFactor.signIn($1)
        },
        Route(.get, "/signin", answers: .page) { $0.signIn.signInForm($1) },
        Route(.post, "/signin", answers: .page, reads: .form, limits: [.signins, .noJavaScript, .hashing], outcome: .signin) {
            $0.signIn.signIn($1)
        },
        // A cookie that names no live session is counted per address, as on /auth; a live one
        // never counts, so a person can always sign out.
        Route(.post, "/signout", answers: .page, limits: [.unknownSessions]) { $0.signIn.signOut($1) },
        Route(.post, "/passkeys/signin/options", answers: .json, limits: [.pages], spentFirst: [.pages]) {
            $0.passkeys.signInOptions($1)
        },
        Route(.post, "/passkeys/signin", answers: .json, reads: .form, limits: [.passkeys, .signins], spentFirst: [.passkeys],
              outcome: .signin) { $0.passkeys.signIn($1) },
        // Issue 45: OpenID Connect providers. The callback carries a code: never in a Referer.
        Route(.post, "/signin/provider", answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages]) {
            $0.providers.start($1)
        },
        Route(.get, "/signin/provider/callback", answers: .page, limits: [.pages], spentFirst: [.pages], sendsNoReferrer: true) {
            $0.providers.callback($1)
        },
        Route(.get, "/auth", answers: .json, limits: [.unknownSessions]) { $0.signIn.forwardAuth($1) },
    ]
}
