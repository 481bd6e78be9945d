import Dispatch
import FormWire
import Foundation
import Logging
import MicroHTTPD
import SignupDomain

/// Routes every request of the sign-up app to the handlers of its concern, each holding only
/// what it uses: the live form (`LiveFormRoutes`), sign-up (`SignupSubmitRoutes`), sign-in
/// (`SignInRoutes`), operations and static files (`OperationsRoutes`). Here: the route table,
/// what every request gets before its handler (the body limit, the cross-site check, `Allow`)
/// and after it (the metric and the access line). Runs on libmicrohttpd's worker threads;
/// each handler is quick, and password hashing is deferred off these threads.
struct SignupRoutes: HTTPResponder {
    let liveForm: LiveFormRoutes
    let signup: SignupSubmitRoutes
    let signIn: SignInRoutes
    /// Nil when addresses are not proved (`--email-verification off`): `/verify` is then 404.
    let verification: VerificationRoutes?
    /// Nil when no mail can be sent: `/recover` is then 404.
    let recovery: RecoveryRoutes?
    let account: AccountRoutes
    let accountChanges: AccountChangeRoutes
    /// Nil when no mail can be sent: `/account/email` is then 404.
    let accountEmail: AccountEmailRoutes?
    let secondFactor: SecondFactorRoutes
    let passkeys: PasskeyRoutes
    let providers: ProviderRoutes
    let operations: OperationsRoutes
    /// For the pages answered before a handler (403 cross-site, 503 restarting).
    let pages: Pages
    let maxBodyBytes: Int
    let addresses: ClientAddressResolver
    let sameOrigin: SameOriginPolicy
    /// The per-address limits a row has the router spend first (`Route.spentFirst`).
    let limiters: ClientLimiters
    let refusals: Refusals
    /// Validates each speaking row's `return_to` for its handler.
    let returnTo: ReturnTo
    /// Reads the signed-in session for the rows that act for the signed-in person.
    let signedInUsers: SignedInUsers
    /// Asked for the rows that need a recent sign-in (`Route.needsRecentSignIn`).
    let recentSignIn: RecentSignIn
    let metrics: SignupMetrics
    let logger: Logger
    /// The access log, one line per request: swift-log's `livesignup.access` logger (operators
    /// route or silence it like any logger), or the process's direct writer of the same text.
    let accessLines: any AccessLineWriting

    init(_ services: Services, isStopping: @escaping @Sendable () -> Bool) {
        liveForm = LiveFormRoutes(services)
        signup = SignupSubmitRoutes(services)
        signIn = SignInRoutes(services)
        verification = VerificationRoutes(services)
        recovery = RecoveryRoutes(services)
        account = AccountRoutes(services)
        accountChanges = AccountChangeRoutes(services, account: account)
        accountEmail = AccountEmailRoutes(services, account: account)
        secondFactor = SecondFactorRoutes(services, account: account)
        passkeys = PasskeyRoutes(services)
        providers = ProviderRoutes(services)
        operations = OperationsRoutes(services, isStopping: isStopping)
        pages = services.pages
        maxBodyBytes = services.configuration.maxBodyBytes
        addresses = services.addresses
        sameOrigin = services.sameOrigin
        limiters = services.limiters
        refusals = services.refusals
        returnTo = services.returnTo
        signedInUsers = services.signedIn
        recentSignIn = services.recentSignIn
        metrics = services.metrics
        logger = services.logger
        accessLines = services.configuration.accessLines ?? LoggerAccessLines(logger: services.logger)
    }

    /// Every request: routed, then timed (metrics) and logged (one access line) once its
    /// answer is known, which for a deferred answer is when the work delivers it.
    func respond(to request: HTTPRequest) -> HTTPResponse {
        let started = DispatchTime.now().uptimeNanoseconds
        let client = addresses.clientAddress(of: request)
        // Resolved once: the handler and the metrics label both come from this path's rows.
        let rows = Self.table.resolve(request.path)
        let method = request.knownMethod
        let row = rows?.route(for: method)
        let response = route(request, method, to: row, of: rows, client: client)
        let label = rows?.name ?? RouteTable.unrouted
        guard case .deferred(let work) = response.body else {
            record(request, route: label, client: client, status: response.status.code, started: started)
            return Self.finished(response, by: row)
        }
        return .later { [self] respond in
            work.start { answer in
                record(request, route: label, client: client, status: answer.status.code, started: started)
                respond(Self.finished(answer, by: row))
            }
        }
    }

    /// What the row declares of every answer, applied here once rather than by each handler.
    private static func finished(_ response: HTTPResponse, by row: Route?) -> HTTPResponse {
        guard let row, row.sendsNoReferrer else { return response }
        var response = response
        response.headers.set("Referrer-Policy", "no-referrer")
        return response
    }

    private func record(_ request: HTTPRequest, route: String, client: String, status: Int, started: UInt64) {
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1_000_000_000
        metrics.request(route: route, status: status, seconds: seconds)
        guard accessLines.isEnabled else { return }
        accessLines.write(AccessLine(method: request.method, route: route, status: status,
                                     durationMilliseconds: Self.milliseconds(seconds), client: client,
                                     token: Self.loggedToken(of: request)))
    }

    /// What the access line shows of a request's form token: enough to follow one form
    /// through the log, never enough to use it. The 6 characters after the last dot (the
    /// instance id before it is the same on every line), letters and digits only, so a
    /// made-up "token" cannot inject anything into a log line. Bytes, not characters: this
    /// runs for every request.
    static func loggedToken(of request: HTTPRequest) -> String? {
        func shown(_ token: UnsafeBufferPointer<UInt8>) -> String {
            let start = token.lastIndex(of: UInt8(ascii: ".")).map { $0 + 1 } ?? 0
            let signed = token[start..<min(token.count, start + 6)]
            return String(unsafeUninitializedCapacity: signed.count) { kept in
                var count = 0
                for byte in signed where (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) {
                    kept[count] = byte
                    count += 1
                }
                return count
            }
        }
        if var token = request.queryValue("token") { return token.withUTF8(shown) }
        guard let range = tokenRange(in: request) else { return nil }
        return request.body.withUnsafeBufferPointer { shown(UnsafeBufferPointer(rebasing: $0[range])) }
    }

    /// "3.41": two decimals without Foundation's `String(format:)`, which costs microseconds.
    /// Its digits written straight into the string: interpolation cost about a thousand
    /// instructions per access line.
    static func milliseconds(_ seconds: Double) -> String {
        let hundredths = max(0, Int((seconds * 100_000).rounded()))
        var digits = hundredths == 0 ? 1 : 0
        var rest = hundredths
        while rest > 0 { digits += 1; rest /= 10 }
        let length = max(digits, 3) + 1  // at least "0.0x"
        return String(unsafeUninitializedCapacity: length) { text in
            var value = hundredths
            for position in stride(from: length - 1, through: 0, by: -1) {
                if position == length - 3 {
                    text[position] = UInt8(ascii: ".")
                } else {
                    text[position] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            return length
        }
    }

    /// Every route: one row per method of a path (see `Route`), its handler in the struct of
    /// its concern.
    static let table = RouteTable([
        Route(.get, "/", answers: .page, limits: [.pages], spentFirst: [.pages]) { $0.liveForm.signupPage($1) },
        Route(.get, "/events", answers: .json, limits: [.sessions]) { $0.liveForm.events($1) },
        // The typing path reads its own body: only the fields it uses, no language.
        // A recovery's new-password form checks "not your current password" with a hash.
        Route(.post, "/fields", answers: .json, limits: [.edits, .sessions, .lookups, .hashing], spentFirst: [.edits]) {
            $0.liveForm.fieldEdit($1)
        },
        Route(.post, "/sessions", answers: .json, limits: [.pages], spentFirst: [.pages]) { $0.liveForm.newSession($1) },
        Route(.get, "/challenge", answers: .json, limits: [.pages], spentFirst: [.pages]) { $0.liveForm.challenge($1) },
        Route(.post, "/signup", answers: .page, reads: .form, limits: [.signups, .noJavaScript, .lookups, .mails, .hashing],
              outcome: .signup) { $0.signup.submit($1) },
        Route(.get, "/verify", answers: .page, sendsNoReferrer: true) { routes, request in
            routes.verification?.page(request) ?? APIError.notFound.response
        },
        Route(.post, "/verify", answers: .page, reads: .form, limits: [.noJavaScript], outcome: .signup,
              sendsNoReferrer: true) { routes, request in
            routes.verification?.verify(request) ?? APIError.notFound.response
        },
        Route(.post, "/verify/resend", answers: .page, reads: .form, limits: [.mails], sendsNoReferrer: true) { routes, request in
            routes.verification?.resend(request) ?? APIError.notFound.response
        },
        Route(.post, "/verify/change", answers: .page, reads: .form, sendsNoReferrer: true) { routes, request in
            routes.verification == nil ? APIError.notFound.response : routes.signup.changeAddress(request)
        },
        // Account recovery: every answer without a referrer (a link's secret passes through).
        Route(.get, "/recover", answers: .page, limits: [.pages], spentFirst: [.pages], sendsNoReferrer: true) { routes, request in
            routes.recovery?.requestPage(request) ?? APIError.notFound.response
        },
        Route(.post, "/recover", answers: .page, reads: .form, limits: [.mails, .noJavaScript], sendsNoReferrer: true) {
            routes, request in routes.recovery?.start(request) ?? APIError.notFound.response
        },
        Route(.post, "/recover/code", answers: .page, reads: .form, limits: [.noJavaScript, .signins], sendsNoReferrer: true) {
            routes, request in routes.recovery?.checkCode(request) ?? APIError.notFound.response
        },
        Route(.get, "/recover/password", answers: .page, limits: [.pages, .sessions], spentFirst: [.pages],
              sendsNoReferrer: true) { routes, request in
            routes.recovery?.passwordPage(request) ?? APIError.notFound.response
        },
        Route(.post, "/recover/password", answers: .page, reads: .form, limits: [.hashing, .sessions],
              sendsNoReferrer: true) { routes, request in
            routes.recovery?.setPassword(request) ?? APIError.notFound.response
        },
        Route(.post, "/recover/session", answers: .json, limits: [.pages, .sessions], spentFirst: [.pages], sendsNoReferrer: true) {
            routes, request in routes.recovery?.renewSession(request) ?? APIError.notFound.response
        },
        Route(.get, "/welcome", answers: .page, limits: [.pages], spentFirst: [.pages], signedIn: true) { $0.signIn.welcome($1) },
        // The signed-in person's page (issue 43). Changes that matter need a recent sign-in in
        // this browser (`recentSignIn:`): the router asks for it before the handler runs.
        Route(.get, "/account", answers: .page, limits: [.pages], spentFirst: [.pages], signedIn: true) { $0.account.page($1) },
        // The page's live list of devices (and how long changes stay open).
        Route(.get, "/account/events", answers: .json, limits: [.pages], spentFirst: [.pages], signedIn: true) {
            $0.account.events($1)
        },
        Route(.get, "/account/password", answers: .page, limits: [.pages, .sessions], spentFirst: [.pages],
              recentSignIn: .password) { $0.accountChanges.passwordPage($1) },
        Route(.post, "/account/password", answers: .page, reads: .form, limits: [.signins, .hashing, .sessions],
              recentSignIn: .password) { $0.accountChanges.changePassword($1) },
        Route(.post, "/account/password/session", answers: .json, limits: [.pages, .sessions], spentFirst: [.pages],
              recentSignIn: .password) { $0.accountChanges.renewPasswordSession($1) },
        // A new address: checked live, proved by a mailed code; the old one can undo it for a week.
        Route(.get, "/account/email", answers: .page, limits: [.pages, .sessions], spentFirst: [.pages], recentSignIn: .email) {
            routes, request in routes.accountEmail?.page(request) ?? APIError.notFound.response
        },
        Route(.post, "/account/email/session", answers: .json, limits: [.pages, .sessions], spentFirst: [.pages],
              recentSignIn: .email) { routes, request in routes.accountEmail?.renewSession(request) ?? APIError.notFound.response },
        Route(.post, "/account/email", answers: .page, reads: .form, limits: [.mails, .sessions], recentSignIn: .email) {
            routes, request in routes.accountEmail?.start(request) ?? APIError.notFound.response
        },
        Route(.get, "/account/email/code", answers: .page, limits: [.pages], spentFirst: [.pages], signedIn: true) {
            routes, request in routes.accountEmail?.codePage(request) ?? APIError.notFound.response
        },
        Route(.post, "/account/email/code", answers: .page, reads: .form, signedIn: true) {
            routes, request in routes.accountEmail?.checkCode(request) ?? APIError.notFound.response
        },
        Route(.get, "/account/email/undo", answers: .page, limits: [.pages], spentFirst: [.pages], sendsNoReferrer: true) {
            routes, request in routes.accountEmail?.undoPage(request) ?? APIError.notFound.response
        },
        Route(.post, "/account/email/undo", answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages],
              sendsNoReferrer: true) {
            routes, request in routes.accountEmail?.undo(request) ?? APIError.notFound.response
        },
        // A second factor: set up, renewed and removed behind a recent sign-in; asked for at sign-in.
        Route(.get, "/account/second-factor", answers: .page, limits: [.pages], spentFirst: [.pages],
              recentSignIn: .secondFactor) { $0.secondFactor.page($1) },
        Route(.post, "/account/second-factor", answers: .page, reads: .form, limits: [.signins], recentSignIn: .secondFactor) {
            $0.secondFactor.enable($1)
        },
        // Changing the factor asks for a current code too (paid for as a sign-in's code is).
        Route(.post, "/account/second-factor/codes", answers: .page, reads: .form, limits: [.signins], recentSignIn: .secondFactor) {
            $0.secondFactor.newCodes($1)
        },
        Route(.post, "/account/second-factor/remove", answers: .page, reads: .form, limits: [.signins], recentSignIn: .secondFactor) {
            $0.secondFactor.remove($1)
        },
        Route(.get, "/signin/second-factor", answers: .page, limits: [.pages], spentFirst: [.pages]) {
            $0.secondFactor.signInPage($1)
        },
        Route(.post, "/signin/second-factor", answers: .page, reads: .form, limits: [.signins], outcome: .signin) {
            $0.secondFactor.signIn($1)
        },
        Route(.get, "/account/export", answers: .page, limits: [.pages], spentFirst: [.pages], recentSignIn: .export) {
            $0.accountChanges.export($1)
        },
        Route(.get, "/account/delete", answers: .page, limits: [.pages], spentFirst: [.pages], recentSignIn: .delete) {
            $0.accountChanges.deletePage($1)
        },
        Route(.post, "/account/delete", answers: .page, reads: .form, recentSignIn: .delete) { $0.accountChanges.delete($1) },
        Route(.post, "/account/passkeys/rename", answers: .page, reads: .form, signedIn: true) { $0.account.renamePasskey($1) },
        Route(.post, "/account/passkeys/remove", answers: .page, reads: .form, recentSignIn: .passkeys) {
            $0.account.removePasskey($1)
        },
        Route(.post, "/account/sessions/end", answers: .page, reads: .form, signedIn: true) { $0.account.endSession($1) },
        Route(.post, "/account/confirm", answers: .page, reads: .form, limits: [.signins, .hashing], signedIn: true) {
            $0.account.confirm($1)
        },
        Route(.post, "/account/sessions/end-others", answers: .page, reads: .form, signedIn: true) {
            $0.account.endOtherSessions($1)
        },
        Route(.get, "/signin", answers: .page) { $0.signIn.signInForm($1) },
        Route(.post, "/signin", answers: .page, reads: .form, limits: [.signins, .noJavaScript, .hashing], outcome: .signin) {
            $0.signIn.signIn($1)
        },
        // A cookie that names no live session is counted per address, as on /auth; a live one
        // never counts, so a person can always sign out.
        Route(.post, "/signout", answers: .page, limits: [.unknownSessions]) { $0.signIn.signOut($1) },
        Route(.post, "/passkeys/options", answers: .json, reads: .form, limits: [.pages], spentFirst: [.pages]) {
            $0.passkeys.registrationOptions($1)
        },
        Route(.post, "/passkeys/register", answers: .json, reads: .form, limits: [.passkeys], spentFirst: [.passkeys]) {
            $0.passkeys.register($1)
        },
        Route(.post, "/passkeys/signin/options", answers: .json, limits: [.pages], spentFirst: [.pages]) {
            $0.passkeys.signInOptions($1)
        },
        Route(.post, "/passkeys/signin", answers: .json, reads: .form, limits: [.passkeys, .signins], spentFirst: [.passkeys],
              outcome: .signin) { $0.passkeys.signIn($1) },
        // A stolen cookie alone adds no passkey: a recent sign-in, and the owner is told.
        Route(.post, "/account/passkeys/options", answers: .json, reads: .form, limits: [.pages], spentFirst: [.pages],
              recentSignIn: .passkeys) { $0.passkeys.addOptions($1) },
        Route(.post, "/account/passkeys", answers: .json, reads: .form, limits: [.passkeys], spentFirst: [.passkeys],
              recentSignIn: .passkeys) { $0.passkeys.add($1) },
        // Issue 45: OpenID Connect providers. The callback carries a code: never in a Referer.
        Route(.post, "/signin/provider", answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages]) {
            $0.providers.start($1)
        },
        Route(.get, "/signin/provider/callback", answers: .page, limits: [.pages], spentFirst: [.pages], sendsNoReferrer: true) {
            $0.providers.callback($1)
        },
        Route(.post, "/account/providers/link", answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages],
              recentSignIn: .providers) { $0.providers.link($1) },
        Route(.post, "/account/providers/unlink", answers: .page, reads: .form, recentSignIn: .providers) { routes, request in
            routes.providers.unlink(request) { routes.account.page($0, $1, error: $2, status: $3) }
        },
        Route(.post, "/account/providers/confirm", answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages],
              signedIn: true) { $0.providers.confirm($1) },
        Route(.get, "/auth", answers: .json, limits: [.unknownSessions]) { $0.signIn.forwardAuth($1) },
        Route(.get, "/healthz", answers: .json) { routes, _ in routes.operations.liveness() },
        Route(.get, "/readyz", answers: .json) { routes, _ in routes.operations.readiness() },
        Route(.get, "/metrics", answers: .json) { $0.operations.exposeMetrics(to: $1.client) },
        Route(.get, "/static/", prefix: true, answers: .json) { $0.operations.staticAsset($1.http) },
    ])

    /// Where the form token an urlencoded body carries lies, as sent, found without decoding
    /// the body a second time: the value of the first pair named "token" (at the start or
    /// after '&' only, so "xtoken=" is not taken for it).
    private static func tokenRange(in request: HTTPRequest) -> Range<Int>? {
        guard request.method == "POST", !request.body.isEmpty else { return nil }
        return request.body.withUnsafeBufferPointer { body in
            let key = "token=".utf8
            var pairStart = 0
            while pairStart < body.count {
                let pairEnd = body[pairStart...].firstIndex(of: UInt8(ascii: "&")) ?? body.count
                if pairEnd - pairStart >= key.count, body[pairStart..<pairStart + key.count].elementsEqual(key) {
                    return pairStart + key.count..<pairEnd
                }
                pairStart = pairEnd + 1
            }
            return nil
        }
    }

    private func route(_ request: HTTPRequest, _ method: HTTPMethod?, to route: Route?, of rows: PathRoutes?,
                       client: String) -> HTTPResponse {
        if request.bodyExceededLimit { return APIError.bodyTooLarge(limit: maxBodyBytes).response }
        if method == .post, case .refused(let reason) = sameOrigin.check(request) {
            // info, not warning: anyone can send these, and the access line shows the 403 too.
            logger.info("Refused a cross-site request",
                           metadata: ["path": "\(request.path)", "client": "\(client)", "reason": "\(reason)"])
            switch route?.outcome {
            case .signup?: metrics.signup("refused")
            case .signin?: metrics.signin("refused")
            case nil: break
            }
            return crossSite(request, answers: route?.answers ?? rows?.any.answers ?? .json)
        }
        guard let rows else { return APIError.notFound.response }
        guard let route, let method else { return methodNotAllowed(allow: rows.allow) }
        let clientKey = ClientKey.of(client)
        // What every request of the route costs, spent before any of its work, in one place.
        for name in route.spentFirst {
            guard let limiter = limiters.perAddress(name) else {
                assertionFailure("\(route.path) spends \(name) first, which is not one per-address limit")
                continue
            }
            do throws(LimitExceeded) {
                try limiter.admit(clientKey)
            } catch {
                return route.answers == .page ? refusals.slowDownPage(error, in: page(for: request)) : refusals.limited(error)
            }
        }
        // The posted form, decoded once for the handler (a body that is not one is answered here).
        var form = URLEncodedForm(fields: [])
        if route.reads == .form {
            do throws(APIError) { form = try decodeForm(request) } catch { return error.response }
        }
        let signedIn = route.readsSignedIn ? signedInSession(of: request) : SignupRequest.SignedInSession.notAsked
        let context = SignupRequest(request, method, route: route, client: client, clientKey: clientKey, form: form,
                                    pages: pages, returnTo: returnTo, signedIn: signedIn)
        if route.needsRecentSignIn, case .account(let account) = signedIn, let refusal = notRecent(context, account, route: route) {
            return refusal
        }
        return route.handler(self, context)
    }

    /// The answer for a signed-in person whose last proof in this browser is too old for the
    /// row's change (nil: recent enough). A page goes to `/account`, which asks them to
    /// confirm and then continues to the change; JSON says `recent_signin_required`.
    private func notRecent(_ request: SignupRequest, _ account: Account, route: Route) -> HTTPResponse? {
        do {
            if try recentSignIn.openUntil(for: account, cookieHeader: request.cookieHeader) != nil { return nil }

        } catch {
            logger.error("Account store unavailable to check a recent sign-in", metadata: ["error": "\(error)"])
            return route.answers == .page
                ? request.pages.problem(title: request.text("problem.unavailable_title"), message: request.text("error.unavailable"),
                                        code: "unavailable", status: .serviceUnavailable, headers: HTTPHeaders([("Retry-After", "5")]))
                : APIError(status: .serviceUnavailable, code: "unavailable", message: request.text("error.unavailable")).response
        }
        logger.info("A change asked for a recent sign-in first",
                    metadata: ["account": "\(account.id)", "path": "\(route.path)", "client": "\(request.client)"])
        guard route.answers == .page else {
            var response = APIError(status: .forbidden, code: "recent_signin_required", message: request.text("account.confirm_first")).response
            response.headers.add("Cache-Control", "no-store")
            return response
        }
        let language = request.language.tag == Languages.fallback ? "" : "&lang=\(request.language.tag)"
        let next = (route.continuation ?? .account).rawValue
        return Pages.redirect(to: "/account?\(RecentSignIn.Continuation.field)=\(next)" + language)
    }

    /// The request's signed-in session, as the store says.
    private func signedInSession(of request: HTTPRequest) -> SignupRequest.SignedInSession {
        do {
            return try signedInUsers.account(cookieHeader: request.headers["Cookie"]).map { .account($0) } ?? .signedOut
        } catch {
            return .unavailable("\(error)")
        }
    }

    /// Requests refused before routing: the readable page where a person is looking.
    func respond(to error: HTTPProtocolError, request: HTTPRequest) -> HTTPResponse {
        if error == .shuttingDown, Self.table.resolve(request.path)?.any.answers == .page {
            let pages = page(for: request)
            return pages.problem(title: pages.text("problem.restarting_title"), message: pages.text("problem.restarting_message"),
                                 code: error.code, status: error.status)
        }
        return APIError(status: error.status, code: error.code, message: error.message).response
    }

    func methodNotAllowed(allow: String) -> HTTPResponse {
        var response = APIError(status: .methodNotAllowed, code: "method_not_allowed",
                                message: "This address only accepts \(allow).").response
        response.headers.add("Allow", allow)
        return response
    }

    /// 403 for a post made from another site: a page where a person may be looking, JSON
    /// for the page script's endpoints.
    private func crossSite(_ request: HTTPRequest, answers: Route.Answers) -> HTTPResponse {
        guard answers == .page else { return APIError.crossSite.response }
        let pages = page(for: request)
        return pages.problem(title: pages.text("problem.refused_title"), message: pages.text("problem.refused_message"),
                             code: APIError.crossSite.code, status: .forbidden)
    }

    /// The pages in the visitor's language (`?lang=`, else `Accept-Language`, else English).
    private func page(for request: HTTPRequest) -> Pages {
        pages.speaking(pages.visitorLanguage(request, requested: request.queryValue("lang")))
    }
}
