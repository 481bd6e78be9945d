import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// `/verify`: where a person proves their email address after signing up, by typing the code
/// from the mail or following its link (on any device), and then arrives signed in.
///
/// - `GET /verify?token=…`: the code form ("We sent a code to a…@example.org").
/// - `GET /verify?link=…`: the link's secret leaves the URL at once: it goes into a cookie for
///   `/verify` only, and a `303` leads to the clean `/verify`, before anything is rendered
///   or looked up (so no history, log or `Referer` keeps it).
/// - `GET /verify` with that cookie: a button that confirms the link, naming the account it
///   makes. A link is never used by a GET, because mail scanners follow links in mails
///   before people do.
/// - `POST /verify` with `token` and `code`, or `link`, or the link's cookie: the account is
///   created, the person signed in and sent on to `return_to` or `/welcome`.
/// - `POST /verify/resend` with `token`: a new code (after a cooldown, within the mail limits).
///
/// A code works once, until it expires, and only until 5 wrong ones were typed; a wrong,
/// expired or used code leaves everyone else's sign-ups as they were.
struct VerificationRoutes: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `refusals`, `store`, `signedIn`, `metrics`, `logger`,
    /// `webhooks`, `returnTo`, `now`, `proofOfWork`.
    let services: Services
    let proofs: AddressProofs

    /// Nil when addresses are not proved.
    /// Where a new account goes first when the policy requires a second factor.
    let funnel: SignInFunnel

    init?(_ services: Services) {
        self.services = services
        funnel = SignInFunnel(services)
        guard let proofs = services.outbox.proofs else { return nil }
        self.proofs = proofs
    }

    private var settings: EmailVerificationSettings { proofs.settings }

    // MARK: GET /verify

    /// The cookie a mailed link's secret travels in from `GET /verify?link=…` to the
    /// confirmation (path `/verify`, for the code's lifetime, never readable by scripts).
    static let linkCookie = "livesignup_verify_link"

    func page(_ request: RequestContext) -> HTTPResponse {
        let http = request.http
        if let link = http.queryValue("link") {
            // Only a value shaped like our links goes into a header: anything else (a `;`, a
            // line break) could add cookie attributes or headers of its own.
            guard link.isRandomToken else { return expired(request) }
            return moveLinkOutOfTheURL(request, link)
        }
        guard let token = http.queryValue("token") else {
            guard let link = Self.linkInCookie(http) else { return expired(request) }
            return linkPage(request, link)
        }
        let pending: PendingSignup?
        do {
            pending = try store.pendingSignup(formToken: token, at: now())
        } catch {
            return unavailable(request, error)
        }
        guard let pending else { return expired(request) }
        let notice = http.queryValue("sent") == "1" ? request.text("verify.resent") : ""
        return codePage(request, pending, notice: notice, status: .ok)
    }

    private func moveLinkOutOfTheURL(_ request: RequestContext, _ link: String) -> HTTPResponse {
        // The route's row adds `Referrer-Policy: no-referrer` to this and every /verify answer.
        Pages.redirect(to: "/verify" + PageRenderer.languageQuery(request.language), cookies: [linkCookie(link)])
    }

    private func linkCookie(_ value: String) -> String {
        let cookie = SetCookie(Self.linkCookie, value, path: "/verify", maxAge: Int(settings.codeLifetime), sameSite: .lax,
                               secure: signedIn.secureCookies)
        return value.isEmpty ? cookie.cleared.header : cookie.header
    }

    /// The mailed link's secret from its cookie (a link's token is URL-safe base64; a
    /// request carrying two is answered as carrying none).
    private static func linkInCookie(_ request: HTTPRequest) -> String? {
        let values = request.cookieValues(named: linkCookie).filter(\.isRandomToken)
        return values.count == 1 ? values[0] : nil
    }

    private func linkPage(_ request: RequestContext, _ link: String) -> HTTPResponse {
        let pending: PendingSignup?
        do {
            pending = try store.pendingSignup(linkHash: proofs.secrets.linkHash(link), at: now())
        } catch {
            return unavailable(request, error)
        }
        guard let pending else { return expired(request) }
        let page = VerifyPage(
            heading: request.text("verify.link_title"),
            lead: request.text("verify.link_lead", ["address": .name(EmailAddress.masked(pending.email)), "username": .name(pending.username)]),
            token: nil, confirmsLink: true)
        return verifyPage(request, page, status: .ok)
    }

    // MARK: POST /verify

    func verify(_ request: RequestContext) -> HTTPResponse {
        let form = request.form
        if let link = form["link"], !link.isEmpty { return verify(request, link: link) }
        if form["token"] ?? "" == "", let link = Self.linkInCookie(request.http) {
            return verify(request, link: link)
        }
        return verify(request, token: form["token"] ?? "", typed: form["code"] ?? "", altcha: form[ProofOfWorkGate.field])
    }

    private func verify(_ request: RequestContext, link: String) -> HTTPResponse {
        do {
            guard let pending = try store.pendingSignup(linkHash: proofs.secrets.linkHash(link), at: now()) else {
                metrics.verification(.expired)
                return expired(request)
            }
            return complete(request, pending)
        } catch {
            return unavailable(request, error)
        }
    }

    private func verify(_ request: RequestContext, token: String, typed: String, altcha: String?) -> HTTPResponse {
        let clientKey = request.clientKey
        let pending: PendingSignup?
        do {
            pending = try store.pendingSignup(formToken: token, at: now())
        } catch {
            return unavailable(request, error)
        }
        guard let pending else {
            metrics.verification(.expired)
            return expired(request)
        }
        // After failures from this client, a code pays a proof of work (checked before the
        // code is compared, so a guess costs the work even when it is wrong).
        if let proofOfWork, proofOfWork.pricing.needsProofAfterFailures(addressKey: clientKey) {
            do throws(ProofOfWorkGate.Refusal) {
                _ = try proofOfWork.check(altcha, token: pending.formToken, addressKey: clientKey, issuedAt: nil)
            } catch {
                metrics.verification(.unproved)
                return proofRefused(request, error, pending: pending, typed: typed)
            }
        }
        guard let code = VerificationCodeShape.normalized(typed) else {
            metrics.verification(.invalid)
            return codePage(request, pending, code: typed, fieldError: request.text("verify.code_shape"),
                            status: .unprocessableContent)
        }
        // The try is spent before the code is compared, in one atomic update: parallel
        // guesses cannot all pass a count read before any of them was recorded.
        let tries: Int
        do {
            guard let spent = try store.spendCodeTry(formToken: pending.formToken, maximum: settings.maximumWrongCodes) else {
                metrics.verification(.usedUp)
                return codePage(request, pending, code: typed, fieldError: request.text("verify.code_used_up"),
                                status: .unprocessableContent)
            }
            tries = spent
        } catch {
            return unavailable(request, error)
        }
        guard proofs.secrets.codeMatches(code, formToken: pending.formToken, storedHash: pending.codeHash) else {
            metrics.verification(.wrongCode)
            proofOfWork?.pricing.record(.wrongCode, addressKey: clientKey)
            logger.info("Wrong verification code", metadata: ["tries": "\(tries)"])
            let message = request.wrongCodeMessage(triesLeft: settings.maximumWrongCodes - tries, usedUp: "verify.code_used_up")
            return codePage(request, pending, code: typed, fieldError: message, status: .unprocessableContent)
        }
        return complete(request, pending)
    }

    /// The proof is in: the account is made (once; a second proof finds nothing), its owner
    /// signed in and sent on.
    private func complete(_ request: RequestContext, _ pending: PendingSignup) -> HTTPResponse {
        let text: (String) -> String = request.text, pages = request.pages
        let account: Account
        do {
            guard let made = try store.completePendingSignup(formToken: pending.formToken, at: now(), announce: webhooks != nil) else {
                metrics.verification(.expired)
                return expired(request)
            }
            account = made
        } catch AccountCreationError.emailTaken {
            // Two sign-ups proved the same address; the first one has the account.
            metrics.verification(.emailTaken)
            return pages.problem(title: text("verify.link_title"), message: text("verify.email_taken"), code: "email_taken",
                                 linkText: text("page.footer_link"), status: .conflict)
        } catch AccountCreationError.usernameTaken, AccountCreationError.formAlreadyUsed {
            metrics.verification(.expired)
            return expired(request)
        } catch PasskeyError.credentialExists {
            // The form's passkey belongs to another account by now; the pending sign-up is gone.
            metrics.verification(.expired)
            logger.notice("A proved sign-up's passkey is another account's; nothing was made")
            return pages.problem(title: text("verify.link_title"), message: text("verify.passkey_exists"),
                                 code: "passkey_exists", linkText: text("page.footer_link"), status: .conflict)
        } catch {
            return unavailable(request, error)
        }
        webhooks?.nudge()
        metrics.verification(.verified)
        metrics.signup(.created)
        // The form may have been on another instance: the waiting sign-up kept its split.
        formFunnel.completedByAddressProof(
            formFunnel.dimensions(language: pending.language, credential: pending.passkey != nil ? .passkey : .password,
                                  javascript: pending.ranJavaScript),
            seconds: sessions.age(of: pending.formToken))
        logger.notice("Account created", metadata: ["event": "account_created", "account": "\(account.id)", "email": "verified", "client": "\(request.client)"])
        let language = request.language
        let target = returnTo.validated(pending.returnTo, for: request.http) ?? "/welcome" + PageRenderer.languageQuery(language)
        do {
            // A policy that requires a second factor: set up before the first session.
            var cookies: [String]
            switch try funnel.finish(account, proved: .newAccount, request, returnTo: Optional(Optional(target))) {
            case .secondStep(var step):
                if !request.http.cookieValues(named: Self.linkCookie).isEmpty { step.headers.add("Set-Cookie", linkCookie("")) }
                return step
            case .signedIn(let session):
                cookies = session
            }
            if !request.http.cookieValues(named: Self.linkCookie).isEmpty { cookies.append(linkCookie("")) }
            return Pages.redirect(to: target, cookies: cookies)
        } catch {
            logger.error("Account created, but its signed-in session could not be stored", metadata: ["error": "\(error)"])
            return Pages.redirect(to: "/signin" + PageRenderer.languageQuery(language))
        }
    }

    // MARK: POST /verify/resend

    func resend(_ request: RequestContext) -> HTTPResponse {
        let token = request.form["token"] ?? "", language = request.language
        let text: (String) -> String = request.text, waitPhrase = request.waitPhrase
        do {
            guard let pending = try store.pendingSignup(formToken: token, at: now()) else { return expired(request) }
            let waited = now().timeIntervalSince(pending.lastSentAt)
            if waited < settings.resendCooldown {
                let wait = Int((settings.resendCooldown - waited).rounded(.up))
                refusals.count(LimitExceeded(limit: .mails, retryAfter: TimeInterval(wait)))
                return codePage(request, pending, formError: request.text("verify.resend_wait", ["wait": .text(waitPhrase(wait))]),
                                status: .tooManyRequests, retryAfter: wait)
            }
            do throws(LimitExceeded) {
                try proofs.admitMail(to: pending.email, client: request.clientKey)
            } catch {
                refusals.count(error)
                return codePage(request, pending, formError: request.text("verify.too_many_mails", ["wait": .text(waitPhrase(error.retryAfterSeconds))]),
                                status: .tooManyRequests, retryAfter: error.retryAfterSeconds)
            }
            guard try proofs.renew(pending, language: language) else { return expired(request) }
            metrics.verification(.resent)
            var query = "?token=\(token)&sent=1"
            if language.tag != Languages.fallback { query += "&lang=\(language.tag)" }
            return Pages.redirect(to: "/verify" + query)
        } catch {
            return unavailable(request, error)
        }
    }

    private func proofRefused(_ request: RequestContext, _ refusal: ProofOfWorkGate.Refusal, pending: PendingSignup,
                              typed: String) -> HTTPResponse {
        let message = request.proofRefusalMessage(refusal, signingIn: true, refusals: refusals)
        if request.wantsJSON { return refusal.json(message: message) }
        switch refusal {
        case .overBudget(let exceeded):
            return codePage(request, pending, code: typed, formError: message, status: .tooManyRequests,
                            retryAfter: exceeded.retryAfterSeconds)
        case .storeUnavailable:
            return unavailable(request, refusal)
        case .proof(let reason):
            return codePage(request, pending, code: typed, formError: message, status: reason.status)
        }
    }

    // MARK: Pages

    private func codePage(_ request: RequestContext, _ pending: PendingSignup, code: String = "", notice: String = "",
                          fieldError: String = "", formError: String = "", status: HTTPStatus,
                          retryAfter: Int? = nil) -> HTTPResponse {
        let clientKey = request.clientKey
        var page = VerifyPage(
            heading: request.text("verify.title"),
            lead: request.text("verify.lead", ["address": .name(EmailAddress.masked(pending.email))]),
            token: pending.formToken)
        page.code = code
        page.notice = notice
        page.fieldError = fieldError
        page.formError = formError
        if let proofOfWork, proofOfWork.pricing.needsProofAfterFailures(addressKey: clientKey) {
            page.challenge = proofOfWork.challenge(for: pending.formToken, addressKey: clientKey).json
        }
        return verifyPage(request, page, status: status, retryAfter: retryAfter)
    }

    private func verifyPage(_ request: RequestContext, _ page: VerifyPage, status: HTTPStatus,
                            retryAfter: Int? = nil) -> HTTPResponse {
        var headers = HTTPHeaders()
        if let retryAfter { headers.add("Retry-After", String(retryAfter)) }
        return request.page(page, status: status, headers: headers)
    }

    /// 410: the code or link is unknown, used or expired (they look the same on purpose).
    private func expired(_ request: RequestContext) -> HTTPResponse {
        let text: (String) -> String = request.text
        return request.pages.problem(title: text("verify.expired_title"),
                      message: text("verify.expired_message").filled(["minutes": .number(Int(settings.codeLifetime / 60))],
                                                                     in: request.language),
                      code: "verification_expired", status: .gone)
    }

    private func unavailable(_ request: RequestContext, _ error: Error) -> HTTPResponse {
        logger.error("Account store unavailable during verification", metadata: ["error": "\(error)"])
        metrics.verification(.unavailable)
        return request.storeUnavailable(retryAfter: 10)
    }
}

