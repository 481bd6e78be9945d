import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// A new address for a signed-in account (issue 43). The new address is checked as the
/// sign-up form checks it (live: its format, the typo suggestion, disposable domains,
/// deliverability), then proved by a code mailed to it; the old address stays the account's
/// until then. Once proved, the old address is told, with a link that brings it back for a
/// week (and signs every browser out: whoever changed it loses the account). An address
/// another account has proved reads exactly like a free one here; its owner is told instead.
/// Nil when no mail can be sent: the routes are then 404.
struct AccountEmailRoutes: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `store`, `signedIn`, `limiters`, `refusals`, `lookups`,
    /// `webhooks`, `logger`, `now`.
    let services: Services
    let forms: AccountFormPages
    let proofs: AddressProofs
    let mails: OutboxDelivery

    /// How long the old address's undo link works.
    static let undoLifetime: TimeInterval = 7 * 86_400
    /// The form field of the code, and of the undo link's secret.
    static let codeField = "code"
    static let linkField = "link"
    /// The undo link's secret, moved out of the URL into a cookie only this page reads (as
    /// `/verify` and `/recover` do), so history, logs and a proxy's access lines never keep it.
    static let undoCookie = "livesignup_undo_link"

    init?(_ services: Services) {
        self.services = services
        guard let proofs = services.outbox.proofs, let mails = services.outbox.accountMails else { return nil }
        self.proofs = proofs
        self.mails = mails
        forms = AccountFormPages(sessions: services.form.sessions, refusals: services.site.refusals)
    }

    private var settings: EmailVerificationSettings { proofs.settings }

    /// The context the account's code is hashed in: one account's code never proves another's.
    private static func codeContext(_ account: Account) -> String { "email-change:\(account.id)" }

    // MARK: GET /account/email

    func page(_ request: RequestContext, _ account: Account) -> HTTPResponse {
        addressPage(request, account, status: .ok)
    }

    // MARK: POST /account/email/session

    func renewSession(_ request: RequestContext) throws -> HTTPResponse {
        try forms.renewSession(request, rules: Self.rules)
    }

    /// The address form's rules for an account: the sign-up form's email checks, no password.
    private static let rules: AccountFormPages.Rules = { account, language in
        (language.policy.newEmail(for: .init(of: account)), nil)
    }

    // MARK: POST /account/email

    /// The new address, judged as the sign-up form judges it; a code mailed to it (or, for an
    /// address another account proved, a word to that account's owner), and the code page.
    func start(_ request: RequestContext, _ account: Account) -> HTTPResponse {
        let policy = request.policy.newEmail(for: .init(of: account))
        let typed = (request.form["email"] ?? "").trimmingCharacters(in: .whitespaces)
        if EmailAddress.canonical(typed) == EmailAddress.canonical(account.email), account.emailVerifiedAt != nil {
            return addressPage(request, account, problems: [(.email, request.text("account.email_same"))], status: .unprocessableContent)
        }
        return .later { [self] respond in
            // The deliverability look-up may take its whole timeout: asked off the request threads.
            lookups.deliverableState(for: typed, in: policy) { deliverable in
                let evaluation = policy.evaluateSubmission(values: [.email: typed], usernameAvailability: .met,
                                                           deliverable: deliverable)
                guard evaluation.isValid else {
                    return respond(addressPage(request, account, problems: evaluation.problems, status: .unprocessableContent))
                }
                respond(mailCode(to: typed, for: account, request))
            }
        }
    }

    private func mailCode(to address: String, for account: Account, _ request: RequestContext) -> HTTPResponse {
        // The client's allowance is about the client: refusing it openly says nothing about the address.
        do throws(LimitExceeded) {
            try limiters.mailsPerAddress.admit(request.clientKey)
        } catch {
            refusals.count(error)
            var response = addressPage(request, account, formError: request.text("recover.too_many", ["wait": .text(request.waitPhrase(error.retryAfterSeconds))]), status: .tooManyRequests)
            response.headers.add("Retry-After", String(error.retryAfterSeconds))
            return response
        }
        let time = now(), expiresAt = time.addingTimeInterval(settings.codeLifetime), code = VerificationSecrets.makeCode()
        do {
            let holder = try store.account(withProvedEmail: address)
            // Silent: a flood at one recipient is dropped, whoever it is.
            let withinLimits: Bool
            do throws(LimitExceeded) {
                try limiters.mailsPerRecipient.admit(EmailAddress.canonical(address))
                withinLimits = true
            } catch {
                withinLimits = false
            }
            let mail: OutboxEvent?
            let isFree = holder == nil || holder?.id == account.id
            if !withinLimits {
                mail = nil
            } else if isFree {
                mail = try proofs.mails.emailChangeCode(to: address, username: account.username, code: code, language: request.language,
                                                        at: time, expiresAt: expiresAt)
            } else {
                mail = try proofs.mails.addressClaimed(to: address, language: request.language, at: time)
            }
            // The stand-in for a taken address looks the same from here, and no code proves it.
            try store.startEmailChange(EmailChange(
                accountID: account.id, newEmail: address,
                codeHash: isFree ? proofs.secrets.codeHash(code, formToken: Self.codeContext(account)) : VerificationSecrets.unmatchableHash(),
                expiresAt: expiresAt, createdAt: time), mail: mail)
            if mail != nil { mails.nudge() }
            logger.notice(isFree ? "Address change started: a code mailed to the new address"
                                 : "Address change asked for an address another account proved; its owner was told",
                          metadata: ["event": "email_change_started", "account": "\(account.id)", "client": "\(request.client)"])
        } catch {
            return refusals.storeUnavailable(request, error)
        }
        return Pages.redirect(to: "/account/email/code" + PageRenderer.languageQuery(request.language))
    }

    // MARK: GET /account/email/code

    func codePage(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        guard let change = try store.emailChange(ofAccount: account.id, at: now()) else {
            return Pages.redirect(to: "/account/email" + PageRenderer.languageQuery(request.language))
        }
        return codePage(request, change: change, status: .ok)
    }

    // MARK: POST /account/email/code

    /// A right code makes the new address the account's; each try is spent before the
    /// comparison, and a used-up change must be started again.
    func checkCode(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        let typed = (request.form[Self.codeField] ?? "").filter { !$0.isWhitespace }
        let time = now()
        guard let change = try store.emailChange(ofAccount: account.id, at: time) else {
            return Pages.redirect(to: "/account/email" + PageRenderer.languageQuery(request.language))
        }
        guard let tries = try store.spendEmailChangeTry(ofAccount: account.id, maximum: settings.maximumWrongCodes, at: time) else {
            return codePage(request, change: change, error: request.text("account.email_code_used_up"), status: .tooManyRequests)
        }
        guard proofs.secrets.codeMatches(typed, formToken: Self.codeContext(account), storedHash: change.codeHash) else {
            logger.notice("A wrong code for an address change", metadata: ["event": "email_change_wrong_code",
                                                                            "account": "\(account.id)", "client": "\(request.client)"])
            let left = settings.maximumWrongCodes - tries
            let message = left > 0 ? request.text("account.email_code_wrong", ["n": .number(left)])
                : request.text("account.email_code_used_up")
            return codePage(request, change: change, error: message, status: .unprocessableContent)
        }
        return try complete(request, account, newEmail: change.newEmail, time)
    }

    private func complete(_ request: RequestContext, _ account: Account, newEmail: String, _ time: Date) throws -> HTTPResponse {
        let undo = VerificationSecrets.makeLinkToken(), language = request.language, announce = webhooks != nil
        let mails = proofs.mails, days = Int(Self.undoLifetime / 86_400)
        // Written with the change, to the old address (if it was ever proved: it may be a stranger's).
        let oldProved = account.emailVerifiedAt != nil
        let notice: OutboxEvent? = oldProved
            ? try mails.emailChanged(to: account.email, username: account.username, newAddress: EmailAddress.masked(newEmail), undoLink: undo, days: days,
                                     language: language, at: time)
            : nil
        let outcome = try store.completeEmailChange(
            ofAccount: account.id, at: time, undoLinkHash: proofs.secrets.linkHash(undo), undoUntil: time.addingTimeInterval(Self.undoLifetime)
        ) { changed, _ in
            (notice.map { [$0] } ?? []) + (announce ? [OutboxEvent.accountChange("account.email_changed", changed, at: time, by: .owner)] : [])
        }
        switch outcome {
        case .changed:
            self.mails.nudge()
            webhooks?.nudge()
            // This instance forgets its memory of the account's sessions (their accounts' addresses).
            signedIn.forgetSessions(ofAccount: account.id)
            logger.notice("Address changed by its account's owner", metadata: ["event": "email_changed", "account": "\(account.id)",
                                                                              "client": "\(request.client)"])
            return Pages.redirect(to: "/account?email=changed" + AccountRoutes.languageParameter(request))
        case .taken, .none:
            // Another account proved it meanwhile (or the stand-in's code): started again from the form.
            return addressPage(request, account, formError: request.text("account.email_taken_meanwhile"), status: .conflict)
        }
    }

    // MARK: GET /account/email/undo?link=…

    /// The undo link's page: a button, so a mail scanner's GET spends nothing.
    func undoPage(_ request: RequestContext) -> HTTPResponse {
        if let link = request.http.queryValue(Self.linkField) {
            // The secret leaves the URL before anything renders (the row adds no-referrer);
            // only a value shaped like our links goes into a header.
            guard link.isRandomToken else { return render(request, .init(mode: .undo(link: "")), status: .notFound) }
            return Pages.redirect(to: "/account/email/undo" + PageRenderer.languageQuery(request.language), cookies: [undoCookie(link)])
        }
        let link = linkInCookie(request) ?? ""
        // The form posts the secret from the cookie: the page itself never carries it.
        return render(request, .init(mode: .undo(link: link.isEmpty ? "" : "cookie")), status: link.isEmpty ? .notFound : .ok)
    }

    /// The one undo secret this browser holds (two: one was planted, neither is believed).
    private func linkInCookie(_ request: RequestContext) -> String? {
        let values = request.http.cookieValues(named: Self.undoCookie).filter(\.isRandomToken)
        return values.count == 1 ? values[0] : nil
    }

    private func undoCookie(_ value: String) -> String {
        let cookie = SetCookie(Self.undoCookie, value, path: "/account/email/undo", maxAge: 3600, sameSite: .lax,
                               secure: signedIn.secureCookies)
        return value.isEmpty ? cookie.cleared.header : cookie.header
    }

    // MARK: POST /account/email/undo

    func undo(_ request: RequestContext) throws -> HTTPResponse {
        // The cookie's secret; a client that posts the link itself (`link`) still may.
        let posted = request.form[Self.linkField] ?? ""
        let link = posted.isRandomToken ? posted : linkInCookie(request) ?? ""
        guard link.isRandomToken else { return render(request, .init(mode: .undone(restored: false)), status: .gone) }
        let time = now(), announce = webhooks != nil
        guard let outcome = try store.undoEmailChange(linkHash: proofs.secrets.linkHash(link), at: time, events: { restored in
            announce ? [OutboxEvent.accountChange("account.email_restored", restored, at: time, by: .owner)] : []
        }) else {
            return render(request, .init(mode: .undone(restored: false)), status: .gone)
        }
        webhooks?.nudge()
        switch outcome {
        case .restored(let account, let removed):
            signedIn.forgetSessions(ofAccount: account.id)
            logger.notice("Address change undone from the old address; every session of the account ended, every way in added since removed",
                          metadata: ["event": "email_restored", "account": "\(account.id)", "client": "\(request.client)",
                                     "passkeys_removed": "\(removed.passkeys)", "providers_removed": "\(removed.providers)",
                                     "second_factor_removed": "\(removed.secondFactor)", "password_restored": "\(removed.password)"])
            return render(request, .init(mode: .undone(restored: true, cleaned: !removed.isEmpty)), status: .ok)
        case .taken:
            return render(request, .init(mode: .undone(restored: false)), status: .conflict)
        }
    }

    // MARK: Pages

    private func addressPage(_ request: RequestContext, _ account: Account, problems: [(field: SignupField, message: String)] = [],
                             formError: String = "", status: HTTPStatus) -> HTTPResponse {
        forms.page(request, for: account, rules: Self.rules, purpose: .address(username: account.username, current: account.email),
                   values: [.email: request.form["email"] ?? ""], problems: problems, formError: formError, status: status)
    }

    private func codePage(_ request: RequestContext, change: EmailChange, error: String? = nil, status: HTTPStatus) -> HTTPResponse {
        var page = AddressPage(mode: .code(address: change.newEmail))
        page.error = error
        return render(request, page, status: status)
    }

    private func render(_ request: RequestContext, _ page: AddressPage, status: HTTPStatus) -> HTTPResponse {
        var headers = HTTPHeaders()
        // The undo's answer ends the secret's cookie, whatever it said.
        if case .undone = page.mode, !request.http.cookieValues(named: Self.undoCookie).isEmpty {
            headers.add("Set-Cookie", undoCookie(""))
        }
        return request.page(page, status: status, headers: headers)
    }
}

extension AccountEmailRoutes {
    /// The address change's handlers with the signed-in account (`RequestContext.forAccount`);
    /// 404 when no mail can be sent, checked first, so nothing about the visitor is asked then.
    static func forAccount(_ request: RequestContext, _ accountEmail: AccountEmailRoutes?,
                           _ body: (AccountEmailRoutes, Account) throws -> HTTPResponse) throws -> HTTPResponse {
        let accountEmail = try offered(accountEmail)
        return try request.forAccount { try body(accountEmail, $0) }
    }
}
