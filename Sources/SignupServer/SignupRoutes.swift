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
    let assets: StaticAssets
    let policy: SignupPolicy
    let maxBodyBytes: Int
    let retryMilliseconds: Int
    let logger: Logger

    func respond(to request: HTTPRequest) -> HTTPResponse {
        if request.bodyExceededLimit { return APIError.bodyTooLarge(limit: maxBodyBytes).response }
        switch request.path {
        case "/":
            guard isRead(request.method) else { return methodNotAllowed(allow: "GET, HEAD") }
            return signupPage()
        case "/events":
            guard isRead(request.method) else { return methodNotAllowed(allow: "GET") }
            return events(request)
        case "/fields":
            guard request.method == "POST" else { return methodNotAllowed(allow: "POST") }
            return fieldEdit(request)
        case "/sessions":
            guard request.method == "POST" else { return methodNotAllowed(allow: "POST") }
            return newSession()
        case "/signup":
            guard request.method == "POST" else { return methodNotAllowed(allow: "POST") }
            return submit(request)
        case "/welcome":
            guard isRead(request.method) else { return methodNotAllowed(allow: "GET, HEAD") }
            return welcome(request)
        case "/signin":
            if isRead(request.method) { return signInPage(username: "", error: nil, status: .ok) }
            guard request.method == "POST" else { return methodNotAllowed(allow: "GET, HEAD, POST") }
            return signIn(request)
        default:
            if request.path.hasPrefix("/static/") {
                guard isRead(request.method) else { return methodNotAllowed(allow: "GET, HEAD") }
                // Asset names are plain: a path that needed decoding (an encoded dot, slash
                // or NUL) is not one of them, whatever it decodes to.
                guard request.rawPath == request.path else { return APIError.notFound.response }
                let name = String(request.path.dropFirst("/static/".count))
                return assets.response(for: request, name: name) ?? APIError.notFound.response
            }
            return APIError.notFound.response
        }
    }

    func isRead(_ method: String) -> Bool {
        method == "GET" || method == "HEAD"
    }

    func methodNotAllowed(allow: String) -> HTTPResponse {
        var response = APIError(status: .methodNotAllowed, code: "method_not_allowed",
                                message: "This address only accepts \(allow).").response
        response.headers.add("Allow", allow)
        return response
    }

    // MARK: GET /

    private func signupPage() -> HTTPResponse {
        let session: FormSession
        do {
            session = try sessions.create()
        } catch {
            return tooManySessions()
        }
        let page = PageRenderer.SignupPage(
            token: session.token, values: [:],
            requirementStates: Dictionary(uniqueKeysWithValues: policy.allRequirements.map { ($0.id, .unmet) }),
            messages: [:], strength: .none)
        return html(renderer.renderSignup(page, policy: policy, assets: assets), status: .ok)
    }

    func tooManySessions() -> HTTPResponse {
        logger.warning("Refused a new form session: the session limit is reached")
        var response = APIError(status: .serviceUnavailable, code: "too_many_sessions",
                                message: "Too many sign-ups are in progress. Please try again in a minute.").response
        response.headers.add("Retry-After", "60")
        return response
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

    /// A fresh form session for a page whose token the server no longer knows.
    private func newSession() -> HTTPResponse {
        guard let session = try? sessions.create() else { return tooManySessions() }
        var response = HTTPResponse.json("{\"token\":\"\(session.token)\"}", status: .created)
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    // MARK: GET /events

    private func events(_ request: HTTPRequest) -> HTTPResponse {
        guard let token = request.queryValue("token"), !token.isEmpty else {
            return APIError.missingParameter("token").response
        }
        guard let session = sessions.session(for: token) else { return APIError.unknownSession.response }
        let stream = EventStream()
        session.attach(stream, retryMilliseconds: retryMilliseconds)
        return .eventStream(stream)
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

    private func fieldEdit(_ request: HTTPRequest) -> HTTPResponse {
        let form: URLEncodedForm
        switch decodeForm(request) {
        case .success(let decoded): form = decoded
        case .failure(let error): return error.response
        }
        for name in ["token", "field", "value", "seq"] where form[name] == nil {
            return APIError.missingParameter(name).response
        }
        guard let field = SignupField(rawValue: form["field"]!) else {
            let known = SignupField.allCases.map(\.rawValue).joined(separator: ", ")
            return APIError(status: .badRequest, code: "unknown_field",
                            message: "Unknown field '\(form["field"]!)'. Expected one of: \(known).").response
        }
        guard let seq = UInt64(form["seq"]!) else {
            return APIError(status: .badRequest, code: "invalid_seq",
                            message: "'seq' must be a non-negative whole number, counting up with each edit of a field.").response
        }
        guard let session = sessions.session(for: form["token"]!) else { return APIError.unknownSession.response }
        let touched = form["touched"] == "1" || form["touched"] == "true"
        let result = session.apply(field: field, value: form["value"]!, seq: seq, touched: touched)
        var response = HTTPResponse.json("{\"applied\":\(result.applied),\"rev\":\(result.rev)}", status: .accepted)
        response.headers.add("X-Rev", String(result.rev))
        response.headers.add("Cache-Control", "no-store")
        return response
    }
}
