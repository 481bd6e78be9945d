import Dispatch
import FormWire
import Foundation
import Logging
import MicroHTTPD
import SignupDomain

/// Routes every request of the sign-up app. Runs on libmicrohttpd's worker threads; each
/// handler is quick (an in-memory session, a template render, an indexed SQLite read).
/// Password hashing is deferred to `hashing`, off these threads.
struct SignupRoutes: HTTPResponder {
    let sessions: FormSessionRegistry
    let store: any AccountStore
    /// The same availability answer the live check gives (reserved names count as taken).
    let availability: StoreAvailabilityChecker
    let hashing: PasswordHashingQueue
    let signedIn: SignedInUsers
    /// A hash of a random password, verified against when a sign-in names no account.
    let placeholderHash: String
    let renderer: PageRenderer
    /// `GET /`'s page in each language, pre-rendered; see `PageRenderer.BlankSignupPage`.
    let blankPages: [String: PageRenderer.BlankSignupPage]
    let assets: StaticAssets
    let languages: Languages
    /// The request's language: English, except in a copy made for one request
    /// (`speaking(_:)`).
    var language: Languages.Language
    /// The rules and texts of that language.
    var policy: SignupPolicy { language.policy }
    let maxBodyBytes: Int
    let retryMilliseconds: Int
    let addresses: ClientAddressResolver
    let sameOrigin: SameOriginPolicy
    let limiters: ClientLimiters
    let health: HealthChecks
    let metrics: SignupMetrics
    let metricsExport: MetricsExport?
    let logger: Logger
    /// One line per request; its own logger so operators can route or silence it.
    let accessLog: Logger
    /// The clock (tests move it): when terms were accepted, and everything else dated.
    let now: @Sendable () -> Date

    /// Every request: routed, then timed (metrics) and logged (one access line) once its
    /// answer is known, which for a deferred answer is when the work delivers it.
    func respond(to request: HTTPRequest) -> HTTPResponse {
        let started = DispatchTime.now().uptimeNanoseconds
        let client = addresses.clientAddress(of: request)
        // Resolved once: the handler and the metrics label both come from this row.
        let row = Self.table.resolve(request.path)
        let response = route(request, to: row, client: client)
        let label = row?.name ?? RouteTable.unrouted
        guard case .deferred(let work) = response.body else {
            record(request, route: label, client: client, status: response.status.code, started: started)
            return response
        }
        return .later { [self] respond in
            work.start { answer in
                record(request, route: label, client: client, status: answer.status.code, started: started)
                respond(answer)
            }
        }
    }

    private func record(_ request: HTTPRequest, route: String, client: String, status: Int, started: UInt64) {
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1_000_000_000
        metrics.request(route: route, status: status, seconds: seconds)
        guard accessLog.logLevel <= .info else { return }
        var metadata: Logger.Metadata = [
            "method": "\(request.method)", "route": "\(route)", "status": "\(status)",
            "duration_ms": "\(Self.milliseconds(seconds))", "client": "\(client)",
        ]
        // Enough to follow one form through the log, never enough to use it; only
        // letters and digits, so a made-up "token" cannot inject anything into a log line.
        // The instance id before the dot is skipped: it is the same on every line.
        if let token = Self.token(in: request) {
            let signed = token.lastIndex(of: ".").map { token[token.index(after: $0)...] } ?? token
            metadata["token"] = "\(String(signed.prefix(6).filter { $0.isASCII && ($0.isLetter || $0.isNumber) }))"
        }
        accessLog.info("request", metadata: metadata)
    }

    /// "3.41": two decimals without Foundation's `String(format:)`, which costs microseconds.
    static func milliseconds(_ seconds: Double) -> String {
        let hundredths = Int((seconds * 100_000).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    /// Every route: one row each (see `Route`). Handlers live with their concern: the live
    /// form below and in +LiveForm, sign-up in +Submit, sign-in in +SignIn, operations here.
    static let table = RouteTable([
        Route(["GET"], "/", answers: .page, limits: [.pages]) { $0.signupPage($1) },
        Route(["GET"], "/events", answers: .json, limits: [.sessions]) { $0.events($1) },
        Route(["POST"], "/fields", answers: .json, limits: [.edits, .sessions]) { $0.fieldEdit($1) },
        Route(["POST"], "/sessions", answers: .json, limits: [.pages]) { $0.newSession($1) },
        Route(["POST"], "/signup", answers: .page, limits: [.signups, .lookups, .hashing], outcome: .signup) { $0.submit($1) },
        Route(["GET"], "/welcome", answers: .page) { $0.speaking($0.visitorLanguage($1.http)).welcome($1.http) },
        Route(["GET", "POST"], "/signin", answers: .page, limits: [.signins, .hashing], outcome: .signin) { routes, request in
            request.method == "POST" ? routes.signIn(request)
                : routes.speaking(routes.visitorLanguage(request.http)).signInPage(username: "", error: nil, status: .ok)
        },
        Route(["GET"], "/healthz", answers: .json) { routes, _ in routes.health.liveness() },
        Route(["GET"], "/readyz", answers: .json) { routes, _ in routes.health.readiness() },
        Route(["GET"], "/metrics", answers: .json) { $0.exposeMetrics(to: $1.client) },
        Route(["GET"], "/static/", prefix: true, answers: .json) { $0.staticAsset($1.http) },
    ])

    /// The form token a request carries (query or urlencoded body), found without decoding
    /// the whole body a second time.
    static func token(in request: HTTPRequest) -> Substring? {
        if let token = request.queryValue("token") { return Substring(token) }
        guard request.method == "POST", !request.body.isEmpty else { return nil }
        let body = request.body
        let key = Array("token=".utf8)
        var index = 0
        while index + key.count <= body.count {
            // At the start or after '&' only, so "xtoken=" is not taken for it.
            if (index == 0 || body[index - 1] == UInt8(ascii: "&")) && body[index..<index + key.count].elementsEqual(key) {
                let start = index + key.count
                let end = body[start...].firstIndex(of: UInt8(ascii: "&")) ?? body.count
                // Up to the longest instance id, its dot and the 6 characters that are logged.
                return Substring(String(decoding: body[start..<min(end, start + 6 + 1 + InstanceID.maximumLength)], as: UTF8.self))
            }
            index += 1
        }
        return nil
    }

    private func route(_ request: HTTPRequest, to route: Route?, client: String) -> HTTPResponse {
        if request.bodyExceededLimit { return APIError.bodyTooLarge(limit: maxBodyBytes).response }
        if request.method == "POST", case .refused(let reason) = sameOrigin.check(request) {
            // info, not warning: anyone can send these, and the access line shows the 403 too.
            logger.info("Refused a cross-site request",
                           metadata: ["path": "\(request.path)", "client": "\(client)", "reason": "\(reason)"])
            switch route?.outcome {
            case .signup?: metrics.signup("refused")
            case .signin?: metrics.signin("refused")
            case nil: break
            }
            return crossSite(request, answers: route?.answers ?? .json)
        }
        guard let route else { return APIError.notFound.response }
        guard route.accepts(request.method) else { return methodNotAllowed(allow: route.allow) }
        return route.handler(self, SignupRequest(request, client: client))
    }

    /// `/static/NAME`: the fingerprinted assets.
    private func staticAsset(_ request: HTTPRequest) -> HTTPResponse {
        // Asset names are plain: a path that needed decoding (an encoded dot, slash
        // or NUL) is not one of them, whatever it decodes to.
        guard request.rawPath == request.path else { return APIError.notFound.response }
        let name = String(request.path.dropFirst("/static/".count))
        return assets.response(for: request, name: name) ?? APIError.notFound.response
    }

    /// Requests refused before routing: the readable page where a person is looking.
    func respond(to error: HTTPProtocolError, request: HTTPRequest) -> HTTPResponse {
        if error == .shuttingDown, Self.table.resolve(request.path)?.answers == .page {
            let routes = speaking(visitorLanguage(request))
            return html(renderer.renderProblem(
                title: routes.text("problem.restarting_title"), message: routes.text("problem.restarting_message"),
                code: error.code, language: routes.language, assets: assets), status: error.status)
        }
        return APIError(status: error.status, code: error.code, message: error.message).response
    }

    /// Prometheus text, to loopback and `--metrics-allow` addresses only; `404` to anyone
    /// else, as if there were nothing here.
    func exposeMetrics(to client: String) -> HTTPResponse {
        guard let metricsExport, metricsExport.allows(client) else { return APIError.notFound.response }
        var response = HTTPResponse(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                    body: metricsExport.render())
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    /// The JSON 429 for the script's endpoints, counted.
    func limited(_ exceeded: LimitExceeded) -> HTTPResponse {
        countLimited(exceeded)
        return APIError.rateLimited(exceeded).response
    }

    /// Counts a refusal over `exceeded`'s limit; every 429 goes through here.
    func countLimited(_ exceeded: LimitExceeded) {
        metrics.rateLimited(exceeded.limit)
        logger.debug("Rate limited", metadata: ["limit": "\(exceeded.limit)"])
    }

    func methodNotAllowed(allow: String) -> HTTPResponse {
        var response = APIError(status: .methodNotAllowed, code: "method_not_allowed",
                                message: "This address only accepts \(allow).").response
        response.headers.add("Allow", allow)
        return response
    }

    // MARK: GET /

    /// The form with a fresh token. No session is built until the token is used, so a page
    /// view costs no memory (and a flood of them only CPU, which the page limit bounds).
    func signupPage(_ request: SignupRequest) -> HTTPResponse {
        let language = visitorLanguage(request.http)
        do throws(LimitExceeded) {
            try limiters.pages.admit(request.clientKey)
        } catch {
            return speaking(language).slowDownPage(error)
        }
        var response = html(blankPages[language.tag]!.render(token: sessions.mintToken()), status: .ok)
        // The page depends on the visitor's languages (caches must not share it).
        response.headers.add("Vary", "Accept-Language")
        response.headers.add("Content-Language", language.tag)
        return response
    }

    /// `?lang=`, else `Accept-Language`, else English.
    func visitorLanguage(_ request: HTTPRequest) -> Languages.Language {
        visitorLanguage(request, requested: request.queryValue("lang"))
    }

    /// `requested` (a form's `lang` field, say), else `Accept-Language`, else English.
    func visitorLanguage(_ request: HTTPRequest, requested: String?) -> Languages.Language {
        languages.negotiate(requested: requested, acceptLanguage: request.headers["accept-language"])
    }

    /// These routes speaking `language`: its rules and texts, for one request.
    func speaking(_ language: Languages.Language) -> SignupRoutes {
        var copy = self
        copy.language = language
        return copy
    }

    func tooManySessions() -> APIError {
        logger.warning("Refused a form session: every session slot holds an open stream")
        var error = APIError(status: .serviceUnavailable, code: "too_many_sessions",
                             message: "Too many sign-ups are in progress. Please try again in a minute.")
        error.retryAfter = 60
        return error
    }

    /// The readable page for a person who went over a limit (429 with `Retry-After`).
    func slowDownPage(_ exceeded: LimitExceeded) -> HTTPResponse {
        countLimited(exceeded)
        let message = text("problem.slow_message").replacingOccurrences(of: "{wait}", with: waitPhrase(exceeded.retryAfterSeconds))
        return html(renderer.renderProblem(title: text("problem.slow_title"), message: message, code: "rate_limited",
                                           linkText: text("problem.slow_link"), language: language, assets: assets),
                    status: .tooManyRequests,
                    headers: HTTPHeaders([("Retry-After", String(exceeded.retryAfterSeconds))]))
    }

    /// 403 for a post made from another site: a page where a person may be looking, JSON
    /// for the page script's endpoints.
    private func crossSite(_ request: HTTPRequest, answers: Route.Answers) -> HTTPResponse {
        guard answers == .page else { return APIError.crossSite.response }
        let routes = speaking(visitorLanguage(request))
        return html(renderer.renderProblem(title: routes.text("problem.refused_title"), message: routes.text("problem.refused_message"),
                                           code: APIError.crossSite.code, language: routes.language, assets: assets),
                    status: .forbidden)
    }

    /// An HTML page that is never cached (each carries its own form session or user).
    func html(_ body: String, status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var response = HTTPResponse.html(body, status: status)
        for (name, value) in headers { response.headers.add(name, value) }
        response.headers.add("Cache-Control", "no-store")
        response.headers.add("X-Content-Type-Options", "nosniff")
        response.headers.add("Referrer-Policy", "same-origin")
        response.headers.add("Content-Security-Policy",
                             "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
        return response
    }

    /// `303 See Other` to `location`, optionally setting a cookie.
    func redirect(to location: String, cookie: String? = nil) -> HTTPResponse {
        var headers = HTTPHeaders([("Location", location), ("Cache-Control", "no-store")])
        if let cookie { headers.add("Set-Cookie", cookie) }
        return HTTPResponse(status: .seeOther, headers: headers)
    }

    // MARK: POST /sessions

    /// A fresh token for a page whose token the server no longer accepts (too old).
    func newSession(_ request: SignupRequest) -> HTTPResponse {
        do throws(LimitExceeded) {
            try limiters.pages.admit(request.clientKey)
        } catch {
            return limited(error)
        }
        var response = HTTPResponse.json("{\"token\":\"\(sessions.mintToken())\"}", status: .created)
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    // MARK: GET /events

    func events(_ context: SignupRequest) -> HTTPResponse {
        let request = context.http, client = context.client
        guard let token = request.queryValue("token"), !token.isEmpty else {
            return APIError.missingParameter("token").response
        }
        if request.method == "HEAD" {
            // Headers only: no session is built for a look; the answer GET would give.
            guard sessions.acceptsForLiveUse(token) else { return APIError.unknownSession.response }
            return .eventStream(EventStream())
        }
        let session: FormSession
        switch lookUpSession(token, client: client, language: request.queryValue("lang")) {
        case .success(let found): session = found
        case .failure(let error): return error.response
        }
        let stream = EventStream()
        session.attach(stream, retryMilliseconds: retryMilliseconds)
        return .eventStream(stream)
    }

    /// The token's session, built on first use, or the error to answer with.
    func lookUpSession(_ token: String, client: String, language: String? = nil) -> Result<FormSession, APIError> {
        do throws(FormSessionRegistry.LookupError) {
            return .success(try sessions.session(for: token, address: client, language: language))
        } catch {
            switch error {
            case .unknown: return .failure(.unknownSession)
            case .limited(let exceeded):
                countLimited(exceeded)
                return .failure(.rateLimited(exceeded))
            case .full: return .failure(tooManySessions())
            }
        }
    }

    // MARK: POST /fields

    /// The request's urlencoded body, or the error response that says what is wrong with it.
    func decodeForm(_ request: HTTPRequest) -> Result<URLEncodedForm, APIError> {
        guard request.mediaType == "application/x-www-form-urlencoded" else {
            return .failure(APIError(status: .unsupportedMediaType, code: "unsupported_media_type",
                                     message: "Send the form as application/x-www-form-urlencoded."))
        }
        do {
            return .success(try URLEncodedForm(decoding: request.body))
        } catch {
            return .failure(APIError(status: .badRequest, code: "invalid_form", message: error.description))
        }
    }

    func fieldEdit(_ context: SignupRequest) -> HTTPResponse {
        let request = context.http, client = context.client
        let form: URLEncodedForm
        switch decodeForm(request) {
        case .success(let decoded): form = decoded
        case .failure(let error): return error.response
        }
        // The token may come in the URL as well (`/fields?token=…`, so a proxy can route by
        // it); if both carry one they must agree.
        let queryToken = request.queryValue("token")
        if let queryToken, let bodyToken = form["token"], queryToken != bodyToken {
            return APIError(status: .badRequest, code: "token_mismatch",
                            message: "The token in the URL and the token in the body differ; send one token.").response
        }
        guard let token = form["token"] ?? queryToken else { return APIError.missingParameter("token").response }
        for name in ["field", "value", "seq"] where form[name] == nil {
            return APIError.missingParameter(name).response
        }
        guard let field = policy.field(named: form["field"]!) else {
            let known = policy.fieldOrder.map(\.rawValue).joined(separator: ", ")
            return APIError(status: .badRequest, code: "unknown_field",
                            message: "Unknown field '\(form["field"]!)'. Expected one of: \(known).").response
        }
        guard let seq = UInt64(form["seq"]!) else {
            return APIError(status: .badRequest, code: "invalid_seq",
                            message: "'seq' must be a non-negative whole number, counting up with each edit of a field.").response
        }
        do throws(LimitExceeded) {
            try limiters.editsPerAddress.admit(context.clientKey)
        } catch {
            return limited(error)
        }
        let session: FormSession
        switch lookUpSession(token, client: client, language: request.queryValue("lang")) {
        case .success(let found): session = found
        case .failure(let error): return error.response
        }
        // Per form only once the token is known genuine, so made-up tokens fill no table.
        do throws(LimitExceeded) {
            try limiters.editsPerSession.admit(token)
        } catch {
            return limited(error)
        }
        let touched = form["touched"] == "1" || form["touched"] == "true"
        let result = session.apply(field: field, value: form["value"]!, seq: seq, touched: touched)
        if result.applied { metrics.edits.increment() }
        var response = HTTPResponse.json(result.json, status: .accepted)
        response.headers.add("X-Rev", String(result.rev))
        response.headers.add("Cache-Control", "no-store")
        return response
    }
}
