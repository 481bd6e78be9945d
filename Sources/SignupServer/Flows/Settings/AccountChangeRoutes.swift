import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebAuthn
import WebKernel

/// The sensitive changes of `/account` (issue 43), each behind a recent sign-in (their rows
/// say `recentSignIn:`; the router sends a person whose proof is too old to confirm first):
/// a new password, checked live as on the sign-up form; the account's data to take away; and
/// deleting the account.
struct AccountChangeRoutes: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `store`, `signedIn`, `hashing`, `limiters`, `refusals`,
    /// `lookups`, `logger`, `now`.
    let services: Services
    let forms: AccountFormPages
    let announcer: AccountAnnouncer
    /// How long a deleted account's username stays kept from new accounts (`--deleted-username-days`).
    let usernameReservation: TimeInterval

    init(_ services: Services) {
        self.services = services
        forms = AccountFormPages(sessions: services.form.sessions, refusals: services.site.refusals)
        announcer = AccountAnnouncer(services)
        usernameReservation = services.configuration.deletedUsernameReservation
    }

    /// The change form's field for the password in use now.
    static let currentPasswordField = "current_password"
    /// The deletion form's field where the person types their username.
    static let confirmUsernameField = "confirm_username"

    // MARK: GET /account/password

    func passwordPage(_ request: RequestContext, _ account: Account) -> HTTPResponse {
        newPasswordPage(request, account, status: .ok)
    }

    // MARK: POST /account/password/session

    /// A fresh live session for the change form (its old one was dropped): `{"token": …}`.
    func renewPasswordSession(_ request: RequestContext) throws -> HTTPResponse {
        try forms.renewSession(request, rules: passwordRules(request))
    }

    // MARK: POST /account/password

    /// The new password, judged as the live form judged it, after the current one is proved
    /// (paid for from the sign-in failure allowances, as a sign-in is). Stored with every other
    /// session of the account ended, the notice and the webhook, in one transaction.
    func changePassword(_ request: RequestContext, _ account: Account) -> HTTPResponse {
        let policy = request.policy.newPassword(for: .init(of: account))
        let values: [SignupField: String] = [.password: request.form["password"] ?? "", .confirm: request.form["confirm"] ?? ""]
        let password = (values[.password] ?? "").canonicallyComposed
        let current = (request.form[Self.currentPasswordField] ?? "").canonicallyComposed
        if account.hasPassword, current.isEmpty {
            return newPasswordPage(request, account, currentPasswordMessage: request.text("account.current_password_empty"),
                                   status: .unprocessableContent)
        }
        return .later { [self] respond in
            // The breach source may take its whole timeout: asked off the request threads.
            lookups.breachState(for: password, in: policy) { breach in
                // The current password is typed here: "not the current one" needs no hash.
                let evaluation = policy.evaluateSubmission(
                    values: values, usernameAvailability: .met, breach: breach, breaches: lookups.breachedPasswords,
                    notCurrent: policy.passwordNotCurrent == nil ? nil : password == current ? .unmet : .met)
                guard evaluation.isValid else {
                    return respond(newPasswordPage(request, account, problems: evaluation.problems, status: .unprocessableContent))
                }
                guard account.hasPassword else { return hashAndStore(password, for: account, request, respond) }
                proveCurrent(current, of: account, request, respond) {
                    hashAndStore(password, for: account, request, respond)
                }
            }
        }
    }

    /// Verifies the current password, as a sign-in would pay for it; `then` runs when it is right.
    private func proveCurrent(_ current: String, of account: Account, _ request: RequestContext,
                              _ respond: @escaping @Sendable (HTTPResponse) -> Void, then: @escaping @Sendable () -> Void) {
        let accountKey = Username.canonical(account.username), clientKey = request.clientKey
        do throws(LimitExceeded) {
            try limiters.admitPasswordGuess(clientKey: clientKey, accountKey: accountKey)
        } catch where error.storeUnavailable {
            return respond(refusals.storeUnavailable(request, StorageFault("the shared limit on password guesses could not be read")))
        } catch {
            refusals.count(error)
            var response = newPasswordPage(request, account, currentPasswordMessage: request.text("signin.too_many", ["wait": .text(request.waitPhrase(error.retryAfterSeconds))]), status: .tooManyRequests)
            response.headers.add("Retry-After", String(error.retryAfterSeconds))
            return respond(response)
        }
        do throws(HashingRefusal) {
            try hashing.verify(current, against: account.passwordHash, client: clientKey) { [self] outcome in
                switch outcome {
                case .success(true):
                    limiters.forgivePasswordGuess(clientKey: clientKey, accountKey: accountKey)
                    then()
                case .success(false):
                    logger.notice("A password change failed: the current password was wrong",
                                  metadata: ["event": "password_change_failed", "account": "\(account.id)", "client": "\(request.client)"])
                    respond(newPasswordPage(request, account, currentPasswordMessage: request.text("account.current_password_wrong"),
                                            status: .unauthorized))
                case .failure:
                    respond(refusals.storeUnavailable(request))
                }
            }
        } catch {
            respond(refusals.storeUnavailable(request))
        }
    }

    private func hashAndStore(_ password: String, for account: Account, _ request: RequestContext,
                              _ respond: @escaping @Sendable (HTTPResponse) -> Void) {
        do throws(HashingRefusal) {
            try hashing.hash(password, client: request.clientKey) { [self] outcome in
                guard case .success(let hash) = outcome else { return respond(refusals.storeUnavailable(request)) }
                respond(store(hash, for: account, request))
            }
        } catch {
            respond(refusals.storeUnavailable(request))
        }
    }

    private func store(_ hash: String, for account: Account, _ request: RequestContext) -> HTTPResponse {
        let time = now()
        let ended: Int
        do {
            let events = try announcer.events(.passwordChanged, webhook: "account.password_changed", for: account,
                                              language: request.language, at: time)
            guard let count = try store.changePassword(ofAccount: account.id, from: account.passwordHash, to: hash,
                                                       keeping: signedIn.sessionHash(in: request.cookieHeader), events: events) else {
                // Another change or a recovery got there first: this one is not stored.
                return newPasswordPage(request, account, currentPasswordMessage: request.text("account.password_changed_meanwhile"),
                                       status: .conflict)
            }
            ended = count
        } catch {
            return refusals.storeUnavailable(request, error)
        }
        // This instance forgets the ended sessions at once; the others within their cache lifetime.
        signedIn.forgetSessions(ofAccount: account.id)
        announcer.nudge()
        logger.notice("Password changed by its account's owner; every other signed-in session ended",
                      metadata: ["event": "password_changed", "account": "\(account.id)", "sessions_ended": "\(ended)", "client": "\(request.client)"])
        return Pages.redirect(to: "/account?password=changed&others=\(ended)" + AccountRoutes.languageParameter(request))
    }

    /// The live check lives as long as the signed-in session that opened the form (asked
    /// through `SignedInUsers`, which remembers a confirmation for 5 s, as `/auth` does).
    private func passwordRules(_ request: RequestContext) -> AccountFormPages.Rules {
        let signedIn = signedIn, cookieHeader = request.cookieHeader
        return AccountFormPages.newPasswordRules(hashing: hashing, client: request.clientKey, lifeline: .init(
            opened: now(), isOpen: { (try? signedIn.account(cookieHeader: cookieHeader)) != nil }, now: now))
    }

    private func newPasswordPage(_ request: RequestContext, _ account: Account, problems: [(field: SignupField, message: String)] = [],
                                 currentPasswordMessage: String = "", status: HTTPStatus) -> HTTPResponse {
        forms.page(request, for: account, rules: passwordRules(request),
                   purpose: .change(username: account.username, hasPassword: account.hasPassword, message: currentPasswordMessage),
                   problems: problems, formError: currentPasswordMessage, status: status)
    }

    // MARK: GET /account/export

    /// The account's data as JSON, to keep or take elsewhere: the profile, the address and
    /// whether it was proved, the sessions, the passkeys' public parts, when terms were
    /// accepted. Never a hash, a session id or a secret.
    func export(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        let sessions = try store.signInSessions(ofAccount: account.id, at: now(), rules: signedIn.rules)
        let passkeys = try store.passkeys(ofAccount: account.id)
        let links = try store.providerLinks(ofAccount: account.id)
        let current = signedIn.sessionHash(in: request.cookieHeader)
        let export = AccountExport(account: account, sessions: sessions, passkeys: passkeys, providerLinks: links,
                                   currentSession: current,
                                   consentFields: Set(request.policy.fields.filter { $0.kind == .checkbox }.map(\.field.rawValue)),
                                   exportedAt: now())
        logger.notice("An account's data exported by its owner", metadata: ["event": "exported", "account": "\(account.id)", "client": "\(request.client)"])
        var response = HTTPResponse.json(export.json, status: .ok)
        response.headers.add("Cache-Control", "no-store")
        let name = "livesignup-\(account.username.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }.map(String.init).joined()).json"
        response.headers.add("Content-Disposition", "attachment; filename=\"\(name)\"")
        return response
    }

    // MARK: GET /account/delete

    func deletePage(_ request: RequestContext, _ account: Account) -> HTTPResponse {
        deletionPage(request, account, status: .ok)
    }

    // MARK: POST /account/delete

    /// Deletes the account once its username is typed: its sessions and passkeys with it, in
    /// one transaction with `account.deleted` and the last mail; its name kept from new
    /// accounts for `usernameReservation`. This browser is signed out.
    func delete(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        let typed = (request.form[Self.confirmUsernameField] ?? "").trimmingCharacters(in: .whitespaces)
        guard Username.canonical(typed) == Username.canonical(account.username), !typed.isEmpty else {
            return deletionPage(request, account, error: request.text("account.delete_mismatch"), status: .unprocessableContent)
        }
        let time = now()
        let events = try announcer.events(.accountDeleted, webhook: "account.deleted", for: account,
                                          language: request.language, at: time)
        guard try store.deleteAccount(id: account.id, reservingUsernameUntil: time.addingTimeInterval(usernameReservation),
                                      events: events) else {
            return RequestContext.signInFirst(request)
        }
        signedIn.forgetSessions(ofAccount: account.id)
        announcer.nudge()
        logger.notice("Account deleted by its owner", metadata: ["event": "account_deleted", "account": "\(account.id)", "client": "\(request.client)"])
        // Its sessions went with the account: this browser's cookie is only cleared.
        let cookies = signedIn.clearedCookies()
        var response = request.pages.problem(title: request.text("account.deleted_title"),
                                             message: request.text("account.deleted_message"), code: "account_deleted",
                                             status: .ok)
        for cookie in cookies { response.headers.add("Set-Cookie", cookie) }
        return response
    }

    private func deletionPage(_ request: RequestContext, _ account: Account, error: String? = nil, status: HTTPStatus) -> HTTPResponse {
        let sessions: Int, passkeys: Int
        do {
            sessions = try store.signInSessions(ofAccount: account.id, at: now(), rules: signedIn.rules).count
            passkeys = try store.passkeys(ofAccount: account.id).count
        } catch {
            return refusals.storeUnavailable(request, error)
        }
        let profile = request.policy.fields.filter { account.profile[$0.field.rawValue] != nil }
            .map { $0.label ?? request.text("field.\($0.field.rawValue).label") }
        let page = DeletionPage(username: account.username, sessions: sessions, passkeys: passkeys,
                                             profileFields: profile, error: error,
                                             reservedDays: Int((usernameReservation / 86_400).rounded()))
        return request.page(page, status: status)
    }
}
