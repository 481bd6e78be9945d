import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import SignupWire
import WebKernel

/// The live form: `GET /` (the page with a fresh token), `POST /sessions` (a fresh token for
/// an old page), `GET /events` (its stream) and `POST /fields` (each edit). The typing path:
/// quick, in memory, on libmicrohttpd's threads.
struct LiveFormRoutes: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `policy`, `refusals`, `sessions`, `limiters`, `metrics`,
    /// `logger`, `proofOfWork`, `providerCookies`.
    let services: Services
    /// `GET /`'s page in each language, pre-rendered; see `SignupPage.Blank`.
    let blankPages: [String: SignupPage.Blank]
    /// Sent as each stream's `retry:`.
    let retryMilliseconds: Int

    init(_ services: Services) {
        self.services = services
        blankPages = Dictionary(uniqueKeysWithValues: services.site.languages.all.map {
            ($0.tag, SignupPage.blank(services.site.renderer, language: $0, assets: services.site.assets,
                                                        withChallenge: services.form.proofOfWork != nil))
        })
        retryMilliseconds = services.configuration.retryMilliseconds
    }

    // MARK: GET /

    /// The form with a fresh token. No session is built until the token is used, so a page
    /// view costs no memory (and a flood of them only CPU, which the page limit bounds).
    func signupPage(_ request: RequestContext) -> HTTPResponse {
        let language = request.language
        let token = sessions.mintToken()
        let challenge = proofOfWork?.challenge(for: token, addressKey: request.clientKey).json ?? ""
        var response = Pages.html(blankPages[language.tag]!.render(token: token, returnTo: request.returnTarget,
                                                                   challenge: challenge),
                                  status: .ok)
        // The page depends on the visitor's languages (caches must not share it).
        response.headers.add("Vary", "Accept-Language")
        return response
    }

    // MARK: POST /sessions

    /// A fresh token for a page whose token the server no longer accepts (too old).
    func newSession(_ request: RequestContext) -> HTTPResponse {
        let token = sessions.mintToken()
        // The old page's challenge was bound to its old token: a new one comes along.
        let challenge = proofOfWork.map { ",\"challenge\":" + $0.challenge(for: token, addressKey: request.clientKey).json } ?? ""
        var response = HTTPResponse.json("{\"token\":\"\(token)\"\(challenge)}", status: .created)
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    // MARK: GET /challenge

    /// A fresh proof-of-work challenge for a genuine form token, at the client's price (the
    /// page's script asks when its challenge no longer fits; programs ask before a sign-up).
    func challenge(_ request: RequestContext) throws -> HTTPResponse {
        guard let proofOfWork else {
            throw APIError(status: .notFound, code: "proofs_off", message: "This server asks for no proof of work.")
        }
        guard let token = request.http.queryValue("token"), !token.isEmpty else {
            throw APIError.missingParameter("token")
        }
        guard sessions.isGenuine(token) else {
            throw APIError(status: .badRequest, code: "invalid_token",
                           message: "The 'token' parameter is not a form token of this server. Reload the page for a new one.")
        }
        var response = HTTPResponse.json(proofOfWork.challenge(for: token, addressKey: request.clientKey).json, status: .ok)
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    // MARK: GET /events

    func events(_ context: RequestContext) throws -> HTTPResponse {
        let request = context.http, client = context.client
        guard let token = request.queryValue("token"), !token.isEmpty else {
            throw APIError.missingParameter("token")
        }
        if context.method == .head {
            // Headers only: no session is built for a look; the answer GET would give.
            guard sessions.acceptsForLiveUse(token) else { throw APIError.unknownSession }
            return .eventStream(EventStream())
        }
        let session = try lookUpSession(token, client: client, language: request.queryValue("lang"))
        let stream = EventStream()
        session.attach(stream, retryMilliseconds: retryMilliseconds)
        return .eventStream(stream)
    }

    /// The token's session, built on first use, or the error to answer with.
    /// Typed throws rather than a `Result`: on the typing path a `Result` was looked up and
    /// destroyed through its generic metadata on every edit.
    private func lookUpSession(_ token: String, client: String, language: String? = nil) throws(APIError) -> LiveFormSession {
        do throws(LiveFormSessionRegistry.LookupError) {
            return try sessions.session(for: token, address: client, language: language)
        } catch {
            switch error {
            case .unknown: throw .unknownSession
            case .limited(let exceeded):
                refusals.count(exceeded)
                throw .rateLimited(exceeded)
            case .full: throw tooManySessions()
            }
        }
    }

    private func tooManySessions() -> APIError {
        logger.warning("Refused a form session: every session slot holds an open stream")
        var error = APIError(status: .serviceUnavailable, code: "too_many_sessions",
                             message: "Too many sign-ups are in progress. Please try again in a minute.")
        error.retryAfter = 60
        return error
    }

    // MARK: POST /fields

    func fieldEdit(_ context: RequestContext) throws -> HTTPResponse {
        let request = context.http, client = context.client
        let edit = try FieldEdit.read(try decodeForm(request), queryToken: request.queryValue("token"), policy: policy)
        // A provider's sign-in is chosen by its answer, not typed: only a browser holding that
        // answer (the sealed cookie) may say it again (after a lost session, say).
        if edit.change == .credential(.provider), providerCookies.identity(in: request, for: .signup) == nil {
            throw APIError(status: .forbidden, code: "no_provider_signin",
                           message: "This browser holds no sign-in with a provider; continue with the provider first.")
        }
        let session = try lookUpSession(edit.token, client: client, language: request.queryValue("lang"))
        // Per form only once the token is known genuine, so made-up tokens fill no table.
        try limiters.editsPerSession.admit(edit.token)
        let result = switch edit.change {
        case .value(let field, let value): session.apply(field: field, value: value, seq: edit.seq, touched: edit.touched)
        case .credential(let method): session.chooseCredential(method, seq: edit.seq)
        }
        if result.applied { metrics.edits.increment() }
        // The headers in one array: one per keystroke, built without a look-up or a copy.
        return HTTPResponse(
            status: .accepted,
            headers: HTTPHeaders([("Content-Type", "application/json"), ("X-Rev", String(result.rev)),
                                  ("Cache-Control", "no-store")]),
            body: .bytes(result.jsonBytes))
    }
}
