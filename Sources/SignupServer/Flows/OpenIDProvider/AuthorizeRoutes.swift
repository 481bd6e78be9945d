import Foundation
import Identity
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
    let now: @Sendable () -> Date

    init(_ services: Services) {
        server = services.openID.server
        users = services.signIn.users
        store = services.store
        now = services.now
    }

    func authorize(_ request: RequestContext) throws -> HTTPResponse {
        let pairs = request.http.query
        let bytes = pairs.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 2 }
        let authorization: AuthorizationRequest
        do {
            authorization = try AuthorizationRequest.read(pairs, queryBytes: bytes, clients: server.declarations)
        } catch .unknownClient {
            throw Refused(status: .badRequest, code: "unknown_client", title: "oauth.refused_title", message: "oauth.unknown_client")
        } catch .badRedirect {
            throw Refused(status: .badRequest, code: "invalid_redirect_uri", title: "oauth.refused_title", message: "oauth.bad_redirect")
        } catch .tooLarge {
            throw Refused(status: .badRequest, code: "invalid_request", title: "oauth.refused_title", message: "oauth.bad_request")
        } catch .toClient(let error, let description) {
            return refuse(pairs, error: error, description: description)
        }
        // Where the person comes back to once signed in: this request, as it came (without
        // `prompt=login`, which is then done), within the bound of any `return_to`.
        let again = Self.returnPath(pairs.filter { !($0.name == "prompt" && $0.value.split(separator: " ").contains("login")) })
        guard again.utf8.count <= ReturnTo.maximumLength else {
            throw Refused(status: .badRequest, code: "invalid_request", title: "oauth.refused_title", message: "oauth.bad_request")
        }
        let language = authorization.uiLocales.lazy.compactMap { request.languages.language($0) }.first ?? request.language
        guard case .account(let account) = request.signedIn else {
            if case .unavailable = request.signedIn { throw Refused.unavailable() }
            if authorization.prompts.contains(.none) {
                return Pages.redirect(to: authorization.redirect([("error", "login_required")], issuer: server.issuer()))
            }
            return signIn(authorization, returningTo: again, in: language)
        }
        guard let session = try currentSession(of: account, request) else {
            return signIn(authorization, returningTo: again, in: language)
        }
        let tooOld = authorization.maxAge.map { now().timeIntervalSince(session.authenticatedAt) > Double($0) } ?? false
        if authorization.prompts.contains(.login) || tooOld {
            if authorization.prompts.contains(.none) {
                return Pages.redirect(to: authorization.redirect([("error", "login_required")], issuer: server.issuer()))
            }
            return signIn(authorization, returningTo: Self.returnPath(pairs.filter { $0.name != "prompt" && $0.name != "max_age" }),
                          in: language)
        }
        guard authorization.client.firstParty else {
            // The consent page comes with the next part of issue 56; until then an
            // application that needs one is told so, and learns nothing.
            return Pages.redirect(to: authorization.redirect(
                [("error", "consent_required"), ("error_description", "this provider grants first-party applications only, for now")],
                issuer: server.issuer()))
        }
        return Pages.redirect(to: try server.issueCode(for: authorization, account: account, session: session))
    }

    /// The session this browser is signed in with, as the account's list has it (its handle,
    /// when it was proved and how).
    private func currentSession(of account: Account, _ request: RequestContext) throws -> SignInSessionSummary? {
        guard let id = users.sessionID(in: request.cookieHeader) else { return nil }
        let hash = SignInSessionID.hash(id)
        return try store.signInSessions(ofAccount: account.id, at: now(), rules: users.rules).first { $0.idHash == hash }
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

    /// An error for the application, at its (already checked) redirect URI.
    private func refuse(_ pairs: [(name: String, value: String)], error: String, description: String) -> HTTPResponse {
        let query = pairs.first { $0.name == "state" }.map { [("state", $0.value)] } ?? []
        let redirect = pairs.first { $0.name == "redirect_uri" }!.value
        let parameters = [("error", error), ("error_description", description)] + query + [("iss", server.issuer())]
        return Pages.redirect(to: redirect + (redirect.contains("?") ? "&" : "?")
                                  + parameters.map { "\($0.0)=\(AuthorizationRequest.encode($0.1))" }.joined(separator: "&"))
    }

    /// This endpoint with `pairs` as its query, each encoded.
    static func returnPath(_ pairs: [(name: String, value: String)]) -> String {
        OpenIDProviderFlow.Path.authorize + "?"
            + pairs.map { AuthorizationRequest.encode($0.name) + "=" + AuthorizationRequest.encode($0.value) }.joined(separator: "&")
    }
}
