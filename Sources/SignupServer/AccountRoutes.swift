import Foundation
import Logging
import MicroHTTPD
import SignupDomain

/// `/account` (issue 43, first part): the signed-in person's page. So far, where they are
/// signed in ("your devices": each live session's browser, network, when it began and was
/// last used, which one is this browser), and signing out any other one, or every other one.
struct AccountRoutes: Sendable {
    let store: any AccountStore
    let signedIn: SignedInUsers
    let metrics: SignupMetrics
    let logger: Logger
    let now: @Sendable () -> Date

    init(_ services: Services) {
        store = services.store
        signedIn = services.signedIn
        metrics = services.metrics
        logger = services.logger
        now = services.now
    }

    /// The form field that names a session by its handle (`SignInSessionSummary.publicID`).
    static let sessionField = "session"

    // MARK: GET /account

    func page(_ request: SignupRequest) -> HTTPResponse {
        forAccount(request) { account in page(request, account) }
    }

    private func page(_ request: SignupRequest, _ account: Account) -> HTTPResponse {
        // What the last change did, said once on the page it leads back to.
        let notice: String?
        if request.http.queryValue("ended") == "one" {
            notice = request.text("account.ended")
        } else if let count = request.http.queryValue("others").flatMap({ Int($0) }), count >= 0 {
            notice = request.text("account.ended_others").replacingOccurrences(of: "{n}", with: String(count))
        } else {
            notice = nil
        }
        return accountPage(request, account, notice: notice, status: .ok)
    }

    // MARK: POST /account/sessions/end

    /// Signs out one other browser of the account, named by its handle.
    func endSession(_ request: SignupRequest) -> HTTPResponse {
        forAccount(request) { account in endSession(request, account) }
    }

    private func endSession(_ request: SignupRequest, _ account: Account) -> HTTPResponse {
        let handle = request.form[Self.sessionField] ?? ""
        do {
            let sessions = try store.signInSessions(ofAccount: account.id, at: now(), rules: signedIn.rules)
            // Only this account's own handles: another's, a made-up or an ended one is named as such.
            guard let session = sessions.first(where: { $0.publicID == handle }),
                  try store.endSignInSession(publicID: handle, ofAccount: account.id) else {
                return accountPage(request, account, error: request.text("account.no_such_session"), status: .notFound)
            }
            signedIn.forget(idHash: session.idHash)
            logger.notice("A signed-in session ended by its account's owner",
                          metadata: ["account": "\(account.id)", "client": "\(request.client)"])
            return Pages.redirect(to: "/account?ended=one" + Self.languageParameter(request))
        } catch {
            return unavailable(request, error)
        }
    }

    // MARK: POST /account/sessions/end-others

    /// Signs out every other browser of the account, keeping this one.
    func endOtherSessions(_ request: SignupRequest) -> HTTPResponse {
        forAccount(request) { account in endOtherSessions(request, account) }
    }

    private func endOtherSessions(_ request: SignupRequest, _ account: Account) -> HTTPResponse {
        do {
            let ended = try store.endSignInSessions(ofAccount: account.id, keeping: signedIn.sessionHash(in: request.cookieHeader))
            // This instance forgets them at once (this browser's confirmation is read again).
            signedIn.forgetSessions(ofAccount: account.id)
            logger.notice("Every other signed-in session ended by its account's owner",
                          metadata: ["account": "\(account.id)", "ended": "\(ended)", "client": "\(request.client)"])
            return Pages.redirect(to: "/account?others=\(ended)" + Self.languageParameter(request))
        } catch {
            return unavailable(request, error)
        }
    }

    // MARK: Pages

    /// Runs `body` for the signed-in account; a signed-out visitor is sent to sign in first,
    /// and a store that could not say is answered 503.
    private func forAccount(_ request: SignupRequest, _ body: (Account) -> HTTPResponse) -> HTTPResponse {
        switch request.signedIn {
        case .account(let account): return body(account)
        case .unavailable(let error):
            logger.error("Account store unavailable to check a signed-in session", metadata: ["error": "\(error)"])
            return unavailable(request)
        case .signedOut, .notAsked: return signInFirst(request)
        }
    }

    private static func languageParameter(_ request: SignupRequest) -> String {
        request.language.tag == Languages.fallback ? "" : "&lang=\(request.language.tag)"
    }

    /// Signed out: to the sign-in form, which brings them back here.
    private func signInFirst(_ request: SignupRequest) -> HTTPResponse {
        let query = PageRenderer.query(languageQuery: PageRenderer.languageQuery(request.language), returnTo: "/account")
        return Pages.redirect(to: "/signin" + query)
    }

    private func accountPage(_ request: SignupRequest, _ account: Account, notice: String? = nil, error: String? = nil,
                             status: HTTPStatus) -> HTTPResponse {
        let sessions: [SignInSessionSummary]
        do {
            sessions = try store.signInSessions(ofAccount: account.id, at: now(), rules: signedIn.rules)
        } catch {
            return unavailable(request, error)
        }
        let current = signedIn.sessionHash(in: request.cookieHeader)
        let page = PageRenderer.AccountPage(
            username: account.username,
            devices: sessions.map { session in
                .init(handle: session.publicID, device: session.device, network: session.network, began: session.createdAt,
                      lastUsed: session.lastSeenAt, isThisBrowser: session.idHash == current)
            },
            notice: notice, error: error)
        var response = Pages.html(request.renderer.renderAccount(page, language: request.language, assets: request.assets),
                                  status: status, headers: HTTPHeaders([("Content-Language", request.language.tag)]))
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    private func unavailable(_ request: SignupRequest, _ error: Error? = nil) -> HTTPResponse {
        if let error { logger.error("Account store unavailable on the account page", metadata: ["error": "\(error)"]) }
        return request.pages.problem(title: request.text("problem.unavailable_title"), message: request.text("error.unavailable"),
                                     code: "unavailable", status: .serviceUnavailable,
                                     headers: HTTPHeaders([("Retry-After", "5")]))
    }
}
