import Dispatch
import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// The endpoints applications and resource servers call from their servers: `token`,
/// `userinfo`, revocation (RFC 7009) and introspection (RFC 7662). Each answers OAuth's JSON
/// (`error`, `error_description`), never a page, and none is ever cached.
struct TokenRoutes: Sendable {
    let server: AuthorizationServer
    let logger: Logger
    let metrics: ServerMetrics
    /// Each application's allowance, spent once it has proved itself (a stranger naming it
    /// cannot spend it; failed proofs draw from the address's `tokens`, spent first).
    let perClient: SharedRateLimiter
    let refusals: Refusals

    init(_ services: Services) {
        perClient = services.site.limiters.tokensPerClient
        refusals = services.site.refusals
        server = services.openID.server
        logger = services.logger
        metrics = services.metrics
    }

    /// The metric's `client` label: a configured id, else `unknown` (a fixed set).
    private func label(_ request: RequestContext) -> String {
        let basic = request.http.headers["Authorization"].flatMap(AuthorizationServer.basic)
        let id = request.form["client_id"] ?? basic.map { AuthorizationServer.formDecoded($0.id) ?? $0.id }
        return server.metricLabel(clientID: id)
    }

    /// Signing an ID token is jwt-kit's async work: done on a Dispatch queue (`.later`),
    /// never on libmicrohttpd's threads.
    private static let queue = DispatchQueue(label: "livesignup.openid-tokens", attributes: .concurrent)

    // MARK: POST /oauth2/token

    func token(_ request: RequestContext) -> HTTPResponse {
        .later { [self] respond in
            Self.queue.async { respond(answer(counting: request) { try issue(request) }) }
        }
    }

    private func issue(_ request: RequestContext) throws -> HTTPResponse {
        let form = try Self.singleValues(request.form)
        let client = try server.authenticate(authorization: request.http.headers["Authorization"], form: { form[$0] })
        try perClient.admit(client.id)
        let tokens: AuthorizationServer.Tokens
        switch form["grant_type"] {
        case "authorization_code"?:
            tokens = try server.redeem(code: form["code"], redirectURI: form["redirect_uri"], verifier: form["code_verifier"],
                                       client: client)
            metrics.openID(client.id, "tokens")
        case "refresh_token"?:
            tokens = try server.refresh(token: form["refresh_token"], client: client)
            metrics.openID(client.id, "refreshed")
        case nil:
            throw AuthorizationServer.TokenError.invalidRequest("grant_type is missing")
        case let other?:
            throw AuthorizationServer.TokenError(code: "unsupported_grant_type",
                                                 description: "grant_type \(other.prefix(40)) is not supported", status: 400)
        }
        return Self.json(tokens)
    }

    // MARK: GET or POST /oauth2/userinfo

    func userinfo(_ request: RequestContext) throws -> HTTPResponse {
        guard let header = request.http.headers["Authorization"], header.lowercased().hasPrefix("bearer ") else {
            return Self.bearerRefusal("invalid_request", "send the access token as Authorization: Bearer")
        }
        let token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        guard let claims = try server.userinfo(accessToken: token) else {
            return Self.bearerRefusal("invalid_token", "the access token is unknown, expired or revoked")
        }
        return Self.json(claims)
    }

    // MARK: POST /oauth2/revoke

    func revoke(_ request: RequestContext) -> HTTPResponse {
        answer {
            let form = try Self.singleValues(request.form)
            let client = try server.authenticate(authorization: request.http.headers["Authorization"], form: { form[$0] })
            try perClient.admit(client.id)
            guard let token = form["token"] else { throw AuthorizationServer.TokenError.invalidRequest("token is missing") }
            try server.revoke(token: token, client: client)
            // The same answer whether it was live, another's or unknown (RFC 7009 §2.2).
            return Self.json([String: String]())
        }
    }

    // MARK: POST /oauth2/introspect

    func introspect(_ request: RequestContext) -> HTTPResponse {
        answer {
            let form = try Self.singleValues(request.form)
            let client = try server.authenticate(authorization: request.http.headers["Authorization"], form: { form[$0] })
            // A resource server proves itself with a secret; a public client could be anyone.
            guard client.secret != nil else { throw AuthorizationServer.TokenError.invalidClient("a public client cannot introspect") }
            try perClient.admit(client.id)
            guard let token = form["token"] else { throw AuthorizationServer.TokenError.invalidRequest("token is missing") }
            return Self.json(try server.introspect(token: token))
        }
    }

    // MARK: Answers

    /// The body's fields, each given once (RFC 6749 §3.2: a repeated parameter is refused).
    private static func singleValues(_ form: URLEncodedForm) throws -> [String: String] {
        var values: [String: String] = [:]
        for (name, value) in form.fields {
            guard values.updateValue(value, forKey: name) == nil else {
                throw AuthorizationServer.TokenError.invalidRequest("\(name.prefix(40)) is given more than once")
            }
        }
        return values
    }

    /// `body`'s answer, or its refusal as OAuth's JSON; a store that could not answer is the
    /// one 503.
    private func answer(counting request: RequestContext? = nil, _ body: () throws -> HTTPResponse) -> HTTPResponse {
        do {
            return try body()
        } catch let error as AuthorizationServer.TokenError {
            if let request { metrics.openID(label(request), error.code) }
            var response = Self.json(["error": error.code, "error_description": error.description],
                                status: error.status == 401 ? .unauthorized : .badRequest)
            if error.status == 401 { response.headers.add("WWW-Authenticate", "Basic realm=\"LiveSignup\"") }
            return response
        } catch let exceeded as LimitExceeded {
            // The application's allowance: the router's 429, counted under `tokens`.
            if let request { metrics.openID(label(request), "rate_limited") }
            return refusals.limited(exceeded)
        } catch {
            logger.error("The OpenID provider could not answer", metadata: ["error": "\(error)"])
            var response = Self.json(["error": "temporarily_unavailable", "error_description": "the account store could not answer"],
                                status: .serviceUnavailable)
            response.headers.add("Retry-After", "5")
            return response
        }
    }

    /// RFC 6750 §3: the refusal of a bearer token.
    private static func bearerRefusal(_ code: String, _ description: String) -> HTTPResponse {
        var response = json(["error": code, "error_description": description], status: .unauthorized)
        response.headers.add("WWW-Authenticate", "Bearer error=\"\(code)\", error_description=\"\(description)\"")
        return response
    }

    /// JSON that is never cached (RFC 6749 §5.1).
    static func json(_ value: some Encodable, status: HTTPStatus = .ok) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var response = HTTPResponse(status: status, contentType: "application/json",
                                    body: Array((try? encoder.encode(value)) ?? Data("{}".utf8)))
        response.headers.add("Cache-Control", "no-store")
        response.headers.add("Pragma", "no-cache")
        return response
    }
}
