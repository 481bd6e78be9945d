import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// `GET /oauth2/authorize`: an application sends a person here to sign in. A request that
/// cannot be trusted with an answer (an unknown client, an unregistered redirect URI) is a
/// page and never a redirect; any other refusal goes back to the application as OAuth's
/// `error`. A person not signed in is sent to LiveSignup's own sign-in (or, for
/// `prompt=create`, the live sign-up form) and comes back here: the session is issued where
/// every session is (`SignInFunnel`), never by this flow.
struct AuthorizeRoutes: Sendable {
    let server: AuthorizationServer
    let users: SignedInUsers
    let store: any AccountStore
    let logger: Logger
    let metrics: ServerMetrics
    let announcer: AccountAnnouncer
    let now: @Sendable () -> Date

    init(_ services: Services) {
        announcer = AccountAnnouncer(services)
        server = services.openID.server
        users = services.signIn.users
        store = services.store
        logger = services.logger
        metrics = services.metrics
        now = services.now
    }

    func authorize(_ request: RequestContext) throws -> HTTPResponse {
        let pairs = request.http.query
        let authorization: AuthorizationRequest
        switch try read(pairs) {
        case .read(let read): authorization = read
        case .toClient(let response): return response
        }
        // Where the person comes back to once signed in: this request, as it came, without
        // what the sign-in then did (`prompt=login`, `max_age`: a loop otherwise), within the
        // bound of any `return_to`. `consent` and `create` stay.
        let back = pairs.compactMap { pair -> (name: String, value: String)? in
            if pair.name == "max_age" { return nil }
            guard pair.name == "prompt" else { return pair }
            let rest = pair.value.split(separator: " ").filter { $0 != "login" }
            return rest.isEmpty ? nil : (pair.name, rest.joined(separator: " "))
        }
        let again = Self.returnPath(back)
        guard again.utf8.count <= ReturnTo.maximumLength else { throw Refused.badOAuthRequest }
        // The person's own choice (`?lang=`, the switcher) first, then the application's
        // `ui_locales`, then the browser's.
        let chosen = request.languages.language(request.http.queryValue("lang"))
        let language = chosen ?? authorization.uiLocales.lazy.compactMap { request.languages.language($0) }.first ?? request.language
        guard case .account(let account) = request.signedIn else {
            if case .unavailable = request.signedIn { throw Refused.unavailable() }
            if authorization.prompts.contains(.none) { return toClient(authorization, error: "login_required") }
            return signIn(authorization, returningTo: again, in: language)
        }
        guard let session = try users.session(of: account, cookieHeader: request.cookieHeader) else {
            return signIn(authorization, returningTo: again, in: language)
        }
        let tooOld = authorization.maxAge.map { now().timeIntervalSince(session.authenticatedAt) > Double($0) } ?? false
        if authorization.prompts.contains(.login) || tooOld {
            if authorization.prompts.contains(.none) { return toClient(authorization, error: "login_required") }
            return signIn(authorization, returningTo: again, in: language)
        }
        // An application that is not the operator's own asks the person first, unless they
        // already let it learn as much (and it did not ask to be asked again).
        if !authorization.client.firstParty {
            let consent = try store.consent(ofAccount: account.id, client: authorization.client.id)
            let covered = consent.map { Set(authorization.scopes).isSubset(of: $0.scopes) } ?? false
            if !covered || authorization.prompts.contains(.consent) {
                if authorization.prompts.contains(.none) { return toClient(authorization, error: "consent_required") }
                return request.page(ConsentPage(client: authorization.client, username: account.username, scopes: authorization.scopes,
                                                request: String(again.dropFirst(OpenIDProviderFlow.Path.authorize.count + 1))),
                                    status: .ok, in: language)
            }
        }
        return try grant(authorization, account: account, session: session, request)
    }

    /// `POST /oauth2/consent`: the person's answer on the consent page, with the request it
    /// answers, read and checked again from the start (the page proves nothing about it).
    func consent(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        let raw = request.form["request"] ?? ""
        guard raw.utf8.count <= AuthorizationRequest.maximumQueryBytes,
              let pairs = try? URLEncodedForm(decoding: Array(raw.utf8)).fields else { throw Refused.badOAuthRequest }
        let authorization: AuthorizationRequest
        switch try read(pairs) {
        case .read(let read): authorization = read
        case .toClient(let response): return response
        }
        guard let session = try users.session(of: account, cookieHeader: request.cookieHeader) else { throw Refused.signedOut }
        switch request.form["decision"] {
        case "allow"?:
            let time = now()
            let events = try announcer.events(nil, webhook: "account.application_allowed", for: account, language: request.language,
                                              at: time, clientID: authorization.client.id)
            try store.recordConsent(ofAccount: account.id, client: authorization.client.id, scopes: authorization.scopes, at: time,
                                    events: events)
            announcer.nudge()
            metrics.openID(authorization.client.id, "consent_allowed")
            logger.notice("An application was allowed to sign a person in", metadata: [
                "event": "openid_consent", "client_id": "\(authorization.client.id)", "account": "\(account.id)",
                "scopes": "\(authorization.scopes.joined(separator: " "))", "client": "\(request.client)"])
            return try grant(authorization, account: account, session: session, request)
        case "deny"?:
            metrics.openID(authorization.client.id, "consent_denied")
            return toClient(authorization, error: "access_denied", description: "the person did not allow it")
        default:
            throw Refused.badOAuthRequest
        }
    }

    /// The code, at the application's redirect URI.
    private func grant(_ authorization: AuthorizationRequest, account: Account, session: SignInSessionSummary,
                       _ request: RequestContext) throws -> HTTPResponse {
        let redirect = try server.issueCode(for: authorization, account: account, session: session)
        metrics.openID(authorization.client.id, "code")
        logger.notice("An application was given a code", metadata: [
            "event": "openid_code", "client_id": "\(authorization.client.id)", "account": "\(account.id)", "client": "\(request.client)"])
        return Pages.redirect(to: redirect)
    }

    private enum Reading {
        case read(AuthorizationRequest)
        /// The refusal, already at the application's redirect URI.
        case toClient(HTTPResponse)
    }

    /// The request read against the registered clients: what cannot be trusted with an answer
    /// is thrown as a page; the rest is the application's redirect.
    private func read(_ pairs: [(name: String, value: String)]) throws -> Reading {
        let bytes = pairs.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 2 }
        do {
            return .read(try AuthorizationRequest.read(pairs, queryBytes: bytes, clients: server.declarations))
        } catch .unknownClient {
            throw Refused.unknownClient
        } catch .badRedirect {
            throw Refused.unregisteredRedirect
        } catch .tooLarge {
            throw Refused.badOAuthRequest
        } catch .toClient(let refusal) {
            return .toClient(Pages.redirect(to: refusal.redirect(issuer: server.issuer())))
        }
    }

    private func toClient(_ authorization: AuthorizationRequest, error: String, description: String? = nil) -> HTTPResponse {
        Pages.redirect(to: authorization.redirect([("error", error)] + (description.map { [("error_description", $0)] } ?? []),
                                                  issuer: server.issuer()))
    }

    /// To LiveSignup's sign-in (or the live sign-up form for `prompt=create`), in the
    /// application's language, and back here afterwards.
    private func signIn(_ authorization: AuthorizationRequest, returningTo path: String, in language: Languages.Language) -> HTTPResponse {
        var query = "lang=\(language.tag)"
        if let hint = authorization.loginHint, !authorization.prompts.contains(.create) {
            query += "&login_hint=" + AuthorizationRequest.encode(hint)
        }
        // `return_to` last: it runs to the end of the query (`ReturnTo.requested`).
        query += "&return_to=" + AuthorizationRequest.encode(path)
        return Pages.redirect(to: (authorization.prompts.contains(.create) ? "/" : "/signin") + "?" + query)
    }

    /// This endpoint with `pairs` as its query, each encoded.
    static func returnPath(_ pairs: [(name: String, value: String)]) -> String {
        OpenIDProviderFlow.Path.authorize + "?"
            + pairs.map { AuthorizationRequest.encode($0.name) + "=" + AuthorizationRequest.encode($0.value) }.joined(separator: "&")
    }
}
