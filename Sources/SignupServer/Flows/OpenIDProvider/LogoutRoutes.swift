import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0, issue 56): an application
/// sends the person here to sign out of LiveSignup too, and gets them back at a
/// `post_logout_redirect_uri` it registered (never anywhere else). With an `id_token_hint`
/// naming this browser's own session it is done at once; otherwise the person is asked, so a
/// link on someone else's page signs nobody out. Every application the session signed in
/// to is then told through the back-channel (`AuthorizationServer.endGrantsOfEndedSessions`).
struct LogoutRoutes: Sendable {
    let server: AuthorizationServer
    let users: SignedInUsers
    let limiters: ClientLimiters
    let refusals: Refusals
    let logouts: OutboxDelivery?
    let logger: Logger
    let metrics: ServerMetrics

    init(_ services: Services) {
        metrics = services.metrics
        server = services.openID.server
        users = services.signIn.users
        limiters = services.site.limiters
        refusals = services.site.refusals
        logouts = services.openID.backchannelLogouts
        logger = services.logger
    }

    /// What a logout request asks, checked: where to go back to (registered, or nowhere),
    /// and whether the request proves it comes from this browser's session's application.
    private struct Logout {
        var redirect: String?
        var state: String?
        var clientID: String?
        var hintSession: String?
    }

    private func read(_ value: (String) -> String?) throws -> Logout {
        var logout = Logout(state: value("state").map { String($0.prefix(AuthorizationRequest.maximumValueBytes)) })
        var clientID = value("client_id")
        if let hint = value("id_token_hint") {
            guard let (audience, session) = server.idTokenHint(hint) else {
                throw Refused.badOAuthRequest
            }
            if let clientID, clientID != audience { throw Refused.unregisteredLogoutRedirect }
            clientID = audience
            logout.hintSession = session
        }
        logout.clientID = clientID
        if let redirect = value("post_logout_redirect_uri") {
            // Only to a URI the application registered for this, byte for byte.
            guard let clientID, let client = server.clients[clientID],
                  client.declaration.postLogoutRedirectURIs.contains(where: { Array($0.utf8) == Array(redirect.utf8) })
            else { throw Refused.unregisteredLogoutRedirect }
            logout.redirect = redirect
        }
        return logout
    }

    /// `GET /oauth2/logout`.
    func ask(_ request: RequestContext) throws -> HTTPResponse {
        let logout = try read { request.http.queryValue($0) }
        guard case .account(let account) = request.signedIn else {
            if case .unavailable = request.signedIn { throw Refused.unavailable() }
            return finished(logout, request, cookies: [])
        }
        // The application's own ID token for this very session: nothing left to confirm.
        if let session = logout.hintSession,
           try users.session(of: account, cookieHeader: request.cookieHeader)?.publicID == session {
            return try signOut(logout, request, account)
        }
        let fields = [("post_logout_redirect_uri", logout.redirect), ("state", logout.state), ("client_id", logout.clientID)]
            .compactMap { name, value in value.map { (name: name, value: $0) } }
        return request.page(LogoutPage(done: false, fields: fields), status: .ok)
    }

    /// `POST /oauth2/logout`: the person's confirmation, a same-site form.
    func confirm(_ request: RequestContext) throws -> HTTPResponse {
        let logout = try read { request.form[$0] }
        guard case .account(let account) = request.signedIn else {
            if case .unavailable = request.signedIn { throw Refused.unavailable() }
            return finished(logout, request, cookies: [])
        }
        return try signOut(logout, request, account)
    }

    private func signOut(_ logout: Logout, _ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        switch try users.signOut(cookieHeader: request.cookieHeader, client: request.clientKey, unknownSessions: limiters.unknownSessions) {
        case .cleared(let cookies):
            let ended = try server.endGrantsOfEndedSessions()
            if ended > 0 { logouts?.nudge() }
            metrics.openID(server.metricLabel(clientID: logout.clientID), "logout")
            logger.notice("Signed out through an application", metadata: [
                "event": "openid_logout", "client_id": "\(logout.clientID ?? "")", "account": "\(account.id)", "grants": "\(ended)",
                "client": "\(request.client)"])
            return finished(logout, request, cookies: cookies)
        case .limited(let exceeded):
            throw exceeded
        }
    }

    /// Back to the application, or the page that says it is done.
    private func finished(_ logout: Logout, _ request: RequestContext, cookies: [String]) -> HTTPResponse {
        guard let redirect = logout.redirect else {
            var response = request.page(LogoutPage(done: true), status: .ok)
            for cookie in cookies { response.headers.add("Set-Cookie", cookie) }
            return response
        }
        return Pages.redirect(to: AuthorizationRequest.answer(at: redirect, logout.state.map { [("state", $0)] } ?? []), cookies: cookies)
    }
}
