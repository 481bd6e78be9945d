import Dispatch
import FormWire
import Foundation
import Logging
import MicroHTTPD
import SignupDomain

/// Routes every request to its row's handler (the rows are every flow's, which make and hold
/// their handlers themselves: the router names none and knows no flow). Here: the route table (every flow's rows), what every request gets before its handler (the body
/// limit, the cross-site check, `Allow`, the limits a row spends first, the signed-in session
/// and a recent sign-in) and after it (`Content-Language`, `Referrer-Policy`, the metric and
/// the access line). Runs on libmicrohttpd's worker threads; each handler is quick, and
/// password hashing is deferred off these threads.
package struct Router: HTTPResponder {
    /// Every flow's rows, their handlers made by their flows (`Flow.routes`).
    package let table: RouteTable
    /// For the pages answered before a handler (403 cross-site, 503 restarting).
    package let pages: Pages
    package let maxBodyBytes: Int
    package let addresses: ClientAddressResolver
    package let sameOrigin: SameOriginPolicy
    /// The per-address limits a row has the router spend first (`Route.spentFirst`).
    package let limiters: ClientLimiters
    package let refusals: Refusals
    /// Validates each speaking row's `return_to` for its handler.
    package let returnTo: ReturnTo
    /// Who is signed in, and whether recently enough, for the rows that ask.
    package let signedIn: any SignedInReading
    package let metrics: RouterMetrics
    package let logger: Logger
    /// The access log, one line per request: swift-log's `livesignup.access` logger (operators
    /// route or silence it like any logger), or the process's direct writer of the same text.
    package let accessLines: any AccessLineWriting

    package init(table: RouteTable, pages: Pages, maxBodyBytes: Int, addresses: ClientAddressResolver, sameOrigin: SameOriginPolicy,
         limiters: ClientLimiters, refusals: Refusals, returnTo: ReturnTo, signedIn: any SignedInReading,
         metrics: RouterMetrics, logger: Logger, accessLines: any AccessLineWriting) {
        self.table = table
        self.pages = pages
        self.maxBodyBytes = maxBodyBytes
        self.addresses = addresses
        self.sameOrigin = sameOrigin
        self.limiters = limiters
        self.refusals = refusals
        self.returnTo = returnTo
        self.signedIn = signedIn
        self.metrics = metrics
        self.logger = logger
        self.accessLines = accessLines
    }

    /// Every request: routed, then timed (metrics) and logged (one access line) once its
    /// answer is known, which for a deferred answer is when the work delivers it.
    package func respond(to request: HTTPRequest) -> HTTPResponse {
        let started = DispatchTime.now().uptimeNanoseconds
        let client = addresses.clientAddress(of: request)
        // Resolved once: the handler and the metrics label both come from this path's rows.
        let rows = table.resolve(request.path)
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
        metrics.request(route, status, seconds)
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
    package static func loggedToken(of request: HTTPRequest) -> String? {
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
    package static func milliseconds(_ seconds: Double) -> String {
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
        if method == .post, route?.acceptsCrossSite != true, case .refused(let reason) = sameOrigin.check(request) {
            // info, not warning: anyone can send these, and the access line shows the 403 too.
            logger.info("Refused a cross-site request",
                           metadata: ["path": "\(request.path)", "client": "\(client)", "reason": "\(reason)"])
            if let outcome = route?.outcome { metrics.refusedCrossSite(outcome) }
            return crossSite(request, answers: route?.answers ?? rows?.any.answers ?? .json)
        }
        guard let rows else { return notFound(request, clientKey: ClientKey.of(client)) }
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
        let signedIn = route.readsSignedIn ? signedInSession(of: request) : RequestContext.SignedInSession.notAsked
        let context = RequestContext(request, method, route: route, client: client, clientKey: clientKey, form: form,
                                    pages: pages, returnTo: returnTo, signedIn: signedIn)
        if route.needsRecentSignIn, case .account(let account) = signedIn, let refusal = notRecent(context, account, route: route) {
            return Self.spoken(refusal, of: route, in: context)
        }
        let answer: HTTPResponse
        do {
            answer = try route.handler(context)
        } catch {
            answer = self.answer(thrown: error, by: route, in: context)
        }
        return Self.spoken(answer, of: route, in: context)
    }

    /// What a handler threw, answered as its row answers (`Refused` lists the cases): a
    /// refusal in the row's form, a limit's 429 counted, and whatever else the account
    /// store's, the one 503, logged.
    private func answer(thrown error: any Error, by route: Route, in request: RequestContext) -> HTTPResponse {
        switch error {
        case let refused as Refused:
            return refused.answer(request)
        case let error as APIError where error == .notFound && route.answers == .page:
            // A page of a flow this server does not offer (`offered`): to a person, an address
            // nothing serves. The row spent its own limits already.
            return notFound(request.http, clientKey: nil)
        case let error as APIError:
            return error.response
        case let exceeded as LimitExceeded where !exceeded.storeUnavailable:
            return route.answers == .page ? refusals.slowDownPage(exceeded, in: request.pages) : refusals.limited(exceeded)
        default:
            return refusals.storeUnavailable(request, error)
        }
    }

    /// A page says which language it is in (`Content-Language`), added here once for every
    /// HTML answer of a speaking row, now or when a deferred one is ready: its handler set it
    /// only where it chose another language than the request's.
    private static func spoken(_ response: HTTPResponse, of route: Route, in request: RequestContext) -> HTTPResponse {
        guard route.speaks else { return response }
        if case .deferred(let work) = response.body {
            return .later { respond in work.start { respond(spoken($0, of: route, in: request)) } }
        }
        guard response.headers["Content-Language"] == nil,
              response.headers["Content-Type"]?.hasPrefix("text/html") == true else { return response }
        var response = response
        response.headers.set("Content-Language", request.language.tag)
        return response
    }

    /// The answer for a signed-in person whose last proof in this browser is too old for the
    /// row's change (nil: recent enough). A page goes to `/account`, which asks them to
    /// confirm and then continues to the change; JSON says `recent_signin_required`.
    private func notRecent(_ request: RequestContext, _ account: Account, route: Route) -> HTTPResponse? {
        do {
            if try signedIn.openUntil(for: account, cookieHeader: request.cookieHeader) != nil { return nil }
        } catch {
            return refusals.storeUnavailable(request, error)
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
        return Pages.redirect(to: "/account?\(SignInContinuation.field)=\(next)" + language)
    }

    /// The request's signed-in session, as the store says.
    private func signedInSession(of request: HTTPRequest) -> RequestContext.SignedInSession {
        do {
            return try signedIn.account(cookieHeader: request.headers["Cookie"]).map { .account($0) } ?? .signedOut
        } catch {
            return .unavailable("\(error)")
        }
    }

    /// Requests refused before routing: the readable page where a person is looking.
    package func respond(to error: HTTPProtocolError, request: HTTPRequest) -> HTTPResponse {
        if error == .shuttingDown, table.resolve(request.path)?.any.answers == .page {
            let pages = page(for: request)
            return pages.problem(title: pages.text("problem.restarting_title"), message: pages.text("problem.restarting_message"),
                                 code: error.code, status: error.status)
        }
        return APIError(status: error.status, code: error.code, message: error.message).response
    }

    package func methodNotAllowed(allow: String) -> HTTPResponse {
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

    /// A path nothing serves. A person who mistyped or followed a broken link reads a page in
    /// their language with the way back; a program (anything not asking for HTML: `curl`'s
    /// `*/*`, `application/json`) keeps the JSON it reads the `error` code of.
    /// A page is rendered only within the address's `pages` limit (`clientKey`; nil where a
    /// row spent its own): past it, or for a program, the JSON costs next to nothing.
    private func notFound(_ request: HTTPRequest, clientKey: String?) -> HTTPResponse {
        let asksForHTML = (request.method == "GET" || request.method == "HEAD")
            && (request.headers["accept"] ?? "").lowercased().contains("text/html")
        guard asksForHTML else { return APIError.notFound.response }
        if let clientKey, let pagesLimit = limiters.perAddress(.pages) {
            do throws(LimitExceeded) { try pagesLimit.admit(clientKey) } catch { return APIError.notFound.response }
        }
        let pages = page(for: request)
        return pages.problem(title: pages.text("problem.not_found_title"), message: pages.text("problem.not_found_message"),
                             code: APIError.notFound.code, linkText: pages.text("problem.back"), status: .notFound)
    }

    /// The pages in the visitor's language (`?lang=`, else `Accept-Language`, else English).
    private func page(for request: HTTPRequest) -> Pages {
        pages.speaking(pages.visitorLanguage(request, requested: request.queryValue("lang")))
    }
}

/// What the router asks about the signed-in person: whose session a cookie carries, and until
/// when their last proof in this browser keeps sensitive changes open (nil: closed). The
/// identity services answer (`SignedInUsers`, `RecentSignIn`); a store error is thrown.
package protocol SignedInReading: Sendable {
    func account(cookieHeader: String?) throws -> Account?
    func openUntil(for account: Account, cookieHeader: String?) throws -> Date?
}

/// What the router reports to the metrics: each request's duration by route and status, and
/// a refused cross-site post as its row's outcome (a refused sign-up or sign-in).
package struct RouterMetrics: Sendable {
    package let request: @Sendable (_ route: String, _ status: Int, _ seconds: Double) -> Void
    package let refusedCrossSite: @Sendable (Route.Outcome) -> Void

    package init(request: @escaping @Sendable (_ route: String, _ status: Int, _ seconds: Double) -> Void,
                 refusedCrossSite: @escaping @Sendable (Route.Outcome) -> Void) {
        self.request = request
        self.refusedCrossSite = refusedCrossSite
    }
}
