import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// The applications a person let sign them in, as `/account` lists them, and withdrawing
/// one: its consent forgotten and every grant it holds ended (its tokens stop working at
/// once; the application learns it at its next refresh or introspection).
struct ApplicationRoutes: Sendable {
    let server: AuthorizationServer
    let store: any AccountStore
    let logger: Logger
    let metrics: ServerMetrics
    let announcer: AccountAnnouncer
    let now: @Sendable () -> Date

    init(_ services: Services) {
        announcer = AccountAnnouncer(services)
        server = services.openID.server
        store = services.store
        logger = services.logger
        metrics = services.metrics
        now = services.now
    }

    /// What `/account` shows: each application with access, by its configured name (an
    /// application no longer configured keeps its id, so it can still be withdrawn).
    func entries(of account: Account) throws -> [AccountPage.ApplicationEntry] {
        try store.consents(ofAccount: account.id, at: now()).map { consent in
            AccountPage.ApplicationEntry(clientID: consent.clientID, name: server.clients[consent.clientID]?.declaration.name ?? consent.clientID,
                                         scopes: consent.scopes)
        }
    }

    /// `POST /account/applications/revoke` `client`.
    func revoke(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        let clientID = request.form["client"] ?? ""
        guard ClientDeclaration.isValidID(clientID) else {
            throw Refused(status: .badRequest, code: "invalid_request", title: "problem.refused_title", message: "oauth.bad_request")
        }
        let events = try announcer.events(nil, webhook: "account.application_removed", for: account, language: request.language,
                                          at: now(), clientID: clientID)
        let ended = try store.revokeClient(clientID, ofAccount: account.id, events: events)
        announcer.nudge()
        metrics.openID(server.metricLabel(clientID: clientID), "revoked")
        logger.notice("An application's access withdrawn by its account's owner", metadata: [
            "event": "openid_revoked", "client_id": "\(clientID)", "account": "\(account.id)", "grants": "\(ended)",
            "client": "\(request.client)"])
        return Pages.redirect(to: "/account?application=revoked&client=\(clientID)"
                                  + (request.language.tag == Languages.fallback ? "" : "&lang=\(request.language.tag)") + "#applications")
    }
}
