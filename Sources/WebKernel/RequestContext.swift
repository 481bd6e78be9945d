import MicroHTTPD
import SignupDomain

/// Everything a handler learns about its request, worked out once by the router before the
/// handler runs (as Hummingbird builds a request context), as its row (`Route`) asks: the
/// request and its method, the client's address and rate-limit key, the posted form, the
/// visitor's language with its pages, the validated `return_to` and the signed-in session.
/// Handlers are immutable bundles of services; what belongs to one request travels here,
/// never in a copy of a handler.
package struct RequestContext: Sendable {
    package let http: HTTPRequest
    /// The method as routed (HEAD for a GET row's look).
    package let method: HTTPMethod
    /// The client's address as the access log and limits see it (behind trusted proxies, the
    /// one they name).
    package let client: String
    /// The client's rate-limit key (its address; an IPv6 /64).
    package let clientKey: String
    /// The posted urlencoded form for rows that read one (`Route.Reads.form`); else empty.
    package let form: URLEncodedForm
    /// The pages in the visitor's language, for rows that speak (`Route.speaks`): a posted
    /// form's hidden `lang` field (other rows: `?lang=`), else `Accept-Language`, else English.
    /// English on the typing path, which never negotiates.
    package let pages: Pages
    /// Where the person goes after signing in or up, validated (a form's `return_to`, else
    /// the query's), for rows that speak.
    package let returnTarget: String?
    /// The signed-in session, for rows that read it (`Route.readsSignedIn`).
    package let signedIn: SignedInSession
    /// What the row answers (a page or JSON): refusals made for it take the same form.
    package let answers: Route.Answers

    /// What the store said of a request's sign-in cookie.
    package enum SignedInSession: Sendable {
        /// The row does not read it.
        case notAsked
        case signedOut
        case account(Account)
        /// The store could not answer (the reason, for the log).
        case unavailable(String)
    }

    package init(_ http: HTTPRequest, _ method: HTTPMethod, route: Route, client: String, clientKey: String,
         form: URLEncodedForm = URLEncodedForm(fields: []), pages: Pages, returnTo: ReturnTo? = nil,
         signedIn: SignedInSession = .notAsked) {
        self.http = http
        self.method = method
        self.client = client
        self.clientKey = clientKey
        self.form = form
        self.signedIn = signedIn
        answers = route.answers
        guard route.speaks else {
            self.pages = pages
            returnTarget = nil
            return
        }
        self.pages = pages.speaking(pages.visitorLanguage(
            http, requested: route.reads == .form ? form["lang"] : http.queryValue("lang")))
        returnTarget = returnTo.flatMap { returnTo in
            route.reads == .form ? returnTo.validated(form["return_to"], for: http) : returnTo.requestedTarget(of: http)
        }
    }

    /// Whether it asked for JSON rather than a page (a program, not a browser): refused
    /// proofs are answered in it.
    package var wantsJSON: Bool {
        let accept = http.headers["Accept"]?.lowercased() ?? ""
        return accept.contains("application/json") && !accept.contains("text/html")
    }

    /// The cookies it sent, as one header (the signed-in session's, the form's bindings).
    package var cookieHeader: String? { http.headers["Cookie"] }

    package var language: Languages.Language { pages.language }
    package var languages: Languages { pages.languages }
    /// The rules and texts of the request's language.
    package var policy: FormPolicy { pages.language.policy }
    package var renderer: PageRenderer { pages.renderer }
    package var assets: StaticAssets { pages.assets }

    /// A flow's page in the request's language (never cached: each carries its own form or account).
    /// - Parameter language: another than the request's, when something the request carries
    ///   chose it (an application's `ui_locales`).
    package func page(_ view: some PageView, status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders(),
                      in language: Languages.Language? = nil) -> HTTPResponse {
        Pages.html(renderer.render(view, language: language ?? self.language, assets: assets), status: status, headers: headers)
    }

    /// A text of the request's language (English's when it lacks one).
    package func text(_ key: String) -> String { pages.text(key) }
    package func text(_ key: String, _ values: [String: MessageValue]) -> String { pages.text(key, values) }
    /// "2 seconds", "a minute" in the request's language.
    package func waitPhrase(_ seconds: Int) -> String { pages.waitPhrase(seconds) }

    /// What a mailed code's form says to a wrong code: how many tries are left, or the text
    /// `usedUp` names when none is (what to do then differs between a sign-up and a recovery).
    package func wrongCodeMessage(triesLeft: Int, usedUp: String) -> String {
        triesLeft <= 0 ? text(usedUp)
            : triesLeft == 1 ? text("verify.code_wrong_one")
            : text("verify.code_wrong", ["n": .number(triesLeft)])
    }
}

extension RequestContext {
    /// 503 for a request the account store could not serve, in the row's form
    /// (`Refused.unavailable`): a page in the request's language where a person is looking,
    /// else the JSON refusal; both say when to try again. The caller logs and counts the cause.
    package func storeUnavailable(retryAfter seconds: Int = 5, message: String = "error.unavailable",
                                  headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        Refused.unavailable(retryAfter: seconds, message: message, headers: headers).answer(self)
    }
}

extension RequestContext {
    /// `body` with the signed-in person's account; else a signed-out person goes to the
    /// sign-in form, which brings them back to `/account` (a JSON row's answer is the 401
    /// `signed_out`), and a store that could not say is thrown to the router, which answers
    /// its one 503.
    package func forAccount(_ body: (Account) throws -> HTTPResponse) throws -> HTTPResponse {
        switch signedIn {
        case .account(let account):
            return try body(account)
        case .unavailable(let reason):
            throw StorageFault(reason)
        case .signedOut, .notAsked:
            guard answers == .page else { throw Refused.signedOut }
            return Self.signInFirst(self)
        }
    }

    /// Signed out: to the sign-in form, which brings them back to `/account`.
    package static func signInFirst(_ request: RequestContext) -> HTTPResponse {
        let query = PageRenderer.query(languageQuery: PageRenderer.languageQuery(request.language), returnTo: "/account")
        return Pages.redirect(to: "/signin" + query)
    }
}
