import Foundation
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// A second factor (issue 44): an authenticator app's codes (TOTP) and single-use recovery
/// codes. Set up, renewed and removed from `/account` behind a recent sign-in; asked for at
/// sign-in after the right password (never before: the password step says nothing of it).
struct SecondFactorRoutes: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `store`, `limiters`, `refusals`, `metrics`, `logger`, `now`.
    let services: Services
    /// Links a provider's identity that waited for this sign-in (issue 45).
    let providerLinks: ProviderLinks
    let seal: SecondFactorSeal
    let announcer: AccountAnnouncer

    let gate: SecondStepGate
    /// Issues the session once the code is right.
    let funnel: SignInFunnel
    /// Judges a code wherever one is asked.
    let check: SecondFactorCheck
    /// How long a setup not yet switched on shows the same secret when its page is loaded
    /// again; after it, a new one.
    static let setupReuse: TimeInterval = 30 * 60
    /// The form field of a code (the app's, or a recovery code).
    static let codeField = "code"

    init(_ services: Services) {
        self.services = services
        providerLinks = ProviderLinks(services)
        seal = services.secondFactorSeal
        announcer = AccountAnnouncer(services)
        gate = SecondStepGate(services)
        funnel = SignInFunnel(services)
        check = SecondFactorCheck(services)
    }

    // MARK: GET /account/second-factor (a recent sign-in)

    /// Switched on: its state, new recovery codes, removal. Off: a new secret to set up, as a
    /// QR code and a key to type, and the field for the app's first code.
    func page(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        let factor = try store.secondFactor(ofAccount: account.id)
        if let factor, factor.isEnabled {
            return render(request, .init(mode: .enabled(codesLeft: factor.recoveryCodesLeft)), status: .ok)
        }
        guard gate.rule != .off else { return notOffered(request) }
        // A setup not yet on shows the same secret again for a while: an app may have scanned it.
        if let factor, now().timeIntervalSince(factor.createdAt) < Self.setupReuse,
           let secret = try? seal.open(factor.sealedSecret, account: account.id) {
            return setupPage(request, account, secret: secret, status: .ok)
        }
        let secret = TOTP.makeSecret()
        guard try store.startSecondFactorSetup(ofAccount: account.id, sealedSecret: try seal.seal(secret, account: account.id),
                                               at: now()) else {
            return render(request, .init(mode: .enabled(codesLeft: 0)), status: .ok)
        }
        return setupPage(request, account, secret: secret, status: .ok)
    }

    private func setupPage(_ request: RequestContext, _ account: Account, secret: [UInt8], error: String? = nil,
                           action: String = "/account/second-factor", status: HTTPStatus) -> HTTPResponse {
        let totp = TOTP(secret: secret)
        let uri = totp.uri(issuer: request.policy.settings.serviceName, account: account.username)
        var page = SecondFactorPage(mode: .setup(
            qr: QRCodeSVG.svg(uri, label: request.text("second_factor.qr_label")) ?? "", key: totp.typedKey, uri: uri,
            action: action))
        page.error = error
        return render(request, page, status: status)
    }

    // MARK: POST /account/second-factor (a recent sign-in)

    /// The app's first code switches the factor on, with ten recovery codes shown once.
    func enable(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        let typed = request.form[Self.codeField] ?? ""
        let secret: [UInt8]
        guard gate.rule != .off else { return notOffered(request) }
        guard let found = try store.secondFactor(ofAccount: account.id), !found.isEnabled else {
            return Pages.redirect(to: "/account/second-factor" + PageRenderer.languageQuery(request.language))
        }
        secret = try seal.open(found.sealedSecret, account: account.id)
        switch switchOn(request, account, secret: secret, typed: typed, action: "/account/second-factor") {
        case .answer(let response):
            return response
        case .notWaiting:
            return Pages.redirect(to: "/account/second-factor" + PageRenderer.languageQuery(request.language))
        case .on(let codes):
            logger.notice("Second factor switched on", metadata: ["event": "second_factor_enabled", "account": "\(account.id)",
                                                                  "client": "\(request.client)"])
            return render(request, .init(mode: .codes(codes, next: "/account" + PageRenderer.languageQuery(request.language))),
                          status: .ok)
        }
    }

    /// What the setup's first code did.
    private enum SwitchOn {
        /// On: its recovery codes, to be shown once.
        case on([String])
        /// No setup waits any more (switched on meanwhile).
        case notWaiting
        /// Refused (a wrong code, a clock off, over the allowances) or the store failed: the answer.
        case answer(HTTPResponse)
    }

    /// The setup's first code, paid for as a sign-in guess, judged, and when right the factor
    /// switched on with ten recovery codes and its announcement: on `/account` and on the
    /// sign-in's step under `required` alike (`action`: where the setup page posts).
    private func switchOn(_ request: RequestContext, _ account: Account, secret: [UInt8], typed: String, action: String) -> SwitchOn {
        if let refused = chargeGuess(request, account) { return .answer(refused) }
        let time = now()
        switch TOTP(secret: secret).match(typed, at: time) {
        case .wrong:
            return .answer(setupPage(request, account, secret: secret, error: wrongCodeText(request), action: action,
                                     status: .unprocessableContent))
        case .clockOff(_, let seconds):
            return .answer(setupPage(request, account, secret: secret, error: clockText(request, seconds), action: action,
                                     status: .unprocessableContent))
        case .accepted(let step):
            limiters.forgiveCodeGuess(clientKey: request.clientKey)
            let codes = SecondFactorSeal.makeRecoveryCodes()
            do {
                let events = try announcer.events(.secondFactorEnabled, webhook: "account.second_factor_enabled", for: account,
                                                  language: request.language, at: time)
                guard try store.enableSecondFactor(ofAccount: account.id, step: step,
                                                   recoveryCodeHashes: codes.map { seal.recoveryCodeHash($0, account: account.id) },
                                                   at: time, events: events) else { return .notWaiting }
            } catch {
                return .answer(refusals.storeUnavailable(request, error))
            }
            announcer.nudge()
            return .on(codes)
        }
    }

    // MARK: POST /account/second-factor/codes (a recent sign-in)

    /// Ten new recovery codes, shown once; every old one stops working.
    /// Behind a current code as well as a recent sign-in (issue 52, ASVS V6: changing an
    /// authenticator needs the factor it protects; a stolen session and password are not it).
    func newCodes(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        if let refused = try proveTheFactor(request, account) { return refused }
        let codes = SecondFactorSeal.makeRecoveryCodes(), time = now()
        let events = try announcer.events(.recoveryCodesReplaced, webhook: nil, for: account, language: request.language, at: time)
        guard try store.replaceRecoveryCodes(ofAccount: account.id, hashes: codes.map { seal.recoveryCodeHash($0, account: account.id) },
                                             events: events) else {
            return Pages.redirect(to: "/account/second-factor" + PageRenderer.languageQuery(request.language))
        }
        announcer.nudge()
        logger.notice("Recovery codes replaced", metadata: ["event": "recovery_codes_replaced", "account": "\(account.id)",
                                                            "client": "\(request.client)"])
        return render(request, .init(mode: .codes(codes, next: "/account" + PageRenderer.languageQuery(request.language))), status: .ok)
    }

    // MARK: POST /account/second-factor/remove (a recent sign-in)

    /// Behind a current code as well as a recent sign-in, as new recovery codes are.
    func remove(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        if let refused = try proveTheFactor(request, account) { return refused }
        let time = now()
        // A setup never switched on is not a factor: nothing to remove or announce.
        guard try store.secondFactor(ofAccount: account.id)?.isEnabled == true else {
            return Pages.redirect(to: "/account/second-factor" + PageRenderer.languageQuery(request.language))
        }
        let events = try announcer.events(.secondFactorRemoved, webhook: "account.second_factor_removed", for: account,
                                          language: request.language, at: time)
        guard try store.removeSecondFactor(ofAccount: account.id, events: events) else {
            return Pages.redirect(to: "/account" + PageRenderer.languageQuery(request.language))
        }
        announcer.nudge()
        logger.notice("Second factor removed by its account's owner", metadata: ["event": "second_factor_removed",
                                                                                "account": "\(account.id)", "client": "\(request.client)"])
        return Pages.redirect(to: "/account?second_factor=removed" + AccountRoutes.languageParameter(request))
    }

    // MARK: GET /signin/second-factor

    func signInPage(_ request: RequestContext) throws -> HTTPResponse {
        guard let step = gate.openStep(request) else { return stepExpired(request) }
        guard let account = try store.account(id: step.account), account.disabledAt == nil else { return stepExpired(request) }
        let factor = try store.secondFactor(ofAccount: account.id)
        if factor?.isEnabled == true { return render(request, .init(mode: .signIn), status: .ok) }
        // Required and not set up yet: the setup, here, before any session (the same
        // secret again when the page is loaded again).
        guard gate.rule == .required else { return stepExpired(request) }
        if let factor, now().timeIntervalSince(factor.createdAt) < Self.setupReuse,
           let secret = try? seal.open(factor.sealedSecret, account: account.id) {
            return setupPage(request, account, secret: secret, action: "/signin/second-factor", status: .ok)
        }
        let secret = TOTP.makeSecret()
        guard try store.startSecondFactorSetup(ofAccount: account.id, sealedSecret: try seal.seal(secret, account: account.id),
                                               at: now()) else { return render(request, .init(mode: .signIn), status: .ok) }
        return setupPage(request, account, secret: secret, action: "/signin/second-factor", status: .ok)
    }

    // MARK: POST /signin/second-factor

    /// The app's code (each step once, across instances) or a recovery code (each once), judged
    /// by `SecondFactorCheck`: paid for from this client's failures and the account's code
    /// allowance, counted in a row, locked at the policy's number.
    func signIn(_ request: RequestContext) throws -> HTTPResponse {
        guard let step = gate.openStep(request) else { return stepExpired(request) }
        let typed = (request.form[Self.codeField] ?? "").trimmingCharacters(in: .whitespaces)
        guard !typed.isEmpty else {
            return render(request, .init(mode: .signIn, error: request.text("second_factor.empty")), status: .unprocessableContent)
        }
        let account: Account, factor: SecondFactor
        guard let found = try store.account(id: step.account), found.disabledAt == nil,
              let stored = try store.secondFactor(ofAccount: found.id) else { return stepExpired(request) }
        account = found
        factor = stored
        // Required, and being set up here: its first code switches it on and signs in.
        if !factor.isEnabled {
            guard gate.rule == .required else { return stepExpired(request) }
            return try enableAtSignIn(request, account, secret: try seal.open(factor.sealedSecret, account: found.id), step: step,
                                  typed: typed)
        }
        let isAppCode: Bool
        switch check.judge(typed, for: account, factor: factor, request) {
        case .right(let appCode): isAppCode = appCode
        case .refused(let message, let status): return render(request, .init(mode: .signIn, error: message), status: status)
        case .limited(let exceeded): return tooManyCodes(request, exceeded, page: .signIn)
        case .unavailable(let error): return refusals.storeUnavailable(request, error)
        }
        var cookies = try sessionAfterTheCode(account, request)
        cookies.append(gate.stepCookie(""))
        // A provider waiting to be linked to this account (issue 45): now it is.
        cookies += providerLinks.finishPending(for: account, request)
        metrics.signin(.success)
        logger.notice("Signed in", metadata: ["event": "signin", "method": isAppCode ? "password+totp" : "password+recovery_code",
                                              "account": "\(account.id)", "client": "\(request.client)"])
        return Pages.redirect(to: step.returnTo ?? "/welcome" + PageRenderer.languageQuery(request.language), cookies: cookies)
    }

    /// Under `required`, the sign-in of an account without a factor: the setup's first code
    /// switches it on (with its recovery codes, shown now), and only then is there a session.
    private func enableAtSignIn(_ request: RequestContext, _ account: Account, secret: [UInt8], step: SecondFactorSeal.SecondStep,
                                typed: String) throws -> HTTPResponse {
        let codes: [String]
        switch switchOn(request, account, secret: secret, typed: typed, action: "/signin/second-factor") {
        case .answer(let response): return response
        case .notWaiting: return stepExpired(request)
        case .on(let made): codes = made
        }
        var cookies = try sessionAfterTheCode(account, request)
        cookies.append(gate.stepCookie(""))
        // A provider waiting to be linked to this account (issue 45): now it is.
        cookies += providerLinks.finishPending(for: account, request)
        metrics.signin(.success)
        logger.notice("Second factor switched on at sign-in, as the policy requires",
                      metadata: ["event": "second_factor_enabled", "account": "\(account.id)", "client": "\(request.client)"])
        var response = render(request, .init(mode: .codes(codes, next: step.returnTo ?? "/welcome"
                                                             + PageRenderer.languageQuery(request.language))), status: .ok)
        for cookie in cookies { response.headers.add("Set-Cookie", cookie) }
        return response
    }

    /// Nil when the account's factor is on and the request carries a right code for it (the
    /// app's, or a recovery code, which is then spent), or when there is no factor on to
    /// change (the handler says so); otherwise the enabled page with why, at the code's field.
    private func proveTheFactor(_ request: RequestContext, _ account: Account) throws -> HTTPResponse? {
        let factor: SecondFactor
        guard let found = try store.secondFactor(ofAccount: account.id), found.isEnabled else { return nil }
        factor = found
        let page = SecondFactorPage.Mode.enabled(codesLeft: factor.recoveryCodesLeft)
        let typed = (request.form[Self.codeField] ?? "").trimmingCharacters(in: .whitespaces)
        guard !typed.isEmpty else {
            return render(request, .init(mode: page, error: request.text("second_factor.any_code_empty")), status: .unprocessableContent)
        }
        switch check.judge(typed, for: account, factor: factor, request) {
        case .right: return nil
        case .refused(let message, let status): return render(request, .init(mode: page, error: message), status: status)
        case .limited(let exceeded): return tooManyCodes(request, exceeded, page: page)
        case .unavailable(let error): return refusals.storeUnavailable(request, error)
        }
    }

    /// The session, through the funnel, once the step's code was right: two factors.
    private func sessionAfterTheCode(_ account: Account, _ request: RequestContext) throws -> [String] {
        guard case .signedIn(let cookies) = try funnel.finish(account, proved: .secondFactor, request) else {
            preconditionFailure("two factors never take a second step")
        }
        return cookies
    }

    /// `second_factor: off`: nothing to set up here (a factor set up before can still be seen
    /// and removed).
    private func notOffered(_ request: RequestContext) -> HTTPResponse {
        request.pages.problem(title: request.text("second_factor.setup_title"), message: request.text("second_factor.not_offered"),
                              code: "second_factor_not_offered", linkURL: "/account" + PageRenderer.languageQuery(request.language),
                              linkText: request.text("account.back"), status: .notFound)
    }

    private func stepExpired(_ request: RequestContext) -> HTTPResponse {
        var response = request.pages.problem(title: request.text("second_factor.expired_title"),
                                             message: request.text("second_factor.expired"), code: "second_step_expired",
                                             linkURL: "/signin" + PageRenderer.languageQuery(request.language),
                                             linkText: request.text("second_factor.signin_again"), status: .gone)
        response.headers.add("Set-Cookie", gate.stepCookie(""))
        return response
    }

    // MARK: Helpers

    /// A setup's first code is paid for before it is compared, as a sign-in's code is
    /// (`SecondFactorCheck.pay`); the client's token is given back when it is right.
    private func chargeGuess(_ request: RequestContext, _ account: Account) -> HTTPResponse? {
        switch check.pay(for: account, request) {
        case nil, .right?, .refused?: return nil
        case .limited(let exceeded)?: return tooManyCodes(request, exceeded, page: .signIn)
        case .unavailable(let error)?: return refusals.storeUnavailable(request, error)
        }
    }

    /// 429 in the page's words, with when to try again.
    private func tooManyCodes(_ request: RequestContext, _ exceeded: LimitExceeded, page: SecondFactorPage.Mode) -> HTTPResponse {
        refusals.count(exceeded)
        let message = request.text("signin.too_many").replacingOccurrences(of: "{wait}", with: request.waitPhrase(exceeded.retryAfterSeconds))
        var response = render(request, .init(mode: page, error: message), status: .tooManyRequests)
        response.headers.add("Retry-After", String(exceeded.retryAfterSeconds))
        return response
    }

    private func wrongCodeText(_ request: RequestContext) -> String {
        request.text("second_factor.wrong").replacingOccurrences(of: "{service}", with: request.policy.settings.serviceName)
    }

    /// "Your device's clock is about 120 seconds ahead…": what no identity server says.
    private func clockText(_ request: RequestContext, _ seconds: Int) -> String {
        request.text(seconds > 0 ? "second_factor.clock_ahead" : "second_factor.clock_behind")
            .filled(["seconds": .number(abs(seconds))], in: request.language)
    }

    private func render(_ request: RequestContext, _ page: SecondFactorPage, status: HTTPStatus) -> HTTPResponse {
        return request.page(page, status: status)
    }
}

/// The sign-in's second step, between a right password (or a passkey that did not verify the
/// person) and a right code: the password's routes hand over here when the account's factor
/// is on. Nothing is stored: the step is a signed token (`SecondFactorSeal.stepToken`) in a
/// cookie only `/signin` reads, good for `lifetime` on any instance sharing the key.
struct SecondStepGate: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `logger`, `now`.
    let services: Services
    let seal: SecondFactorSeal
    let secureCookies: Bool
    /// `required`: an account without a factor takes this step too, to set one up.
    let rule: SecondFactorRule

    /// The cookie that carries the step.
    static let cookie = "livesignup_second_step"
    /// How long the step waits for its code.
    static let lifetime: TimeInterval = 5 * 60

    init(_ services: Services) {
        self.services = services
        seal = services.secondFactorSeal
        secureCookies = services.signedIn.secureCookies
        rule = services.secondFactorRule
    }

    /// The step for `account` (`SignInFunnel` decided it is needed): no session yet, the
    /// step's cookie, and the code page (`303`; under `required`, an account without a factor
    /// sets one up there).
    func start(for account: Account, _ request: RequestContext, returnTo: String?) -> HTTPResponse {
        let token = seal.stepToken(.init(account: account.id, issuedAt: now(), returnTo: returnTo))
        logger.notice("The second factor asked for", metadata: ["event": "second_factor_asked", "account": "\(account.id)",
                                                               "client": "\(request.client)"])
        return Pages.redirect(to: "/signin/second-factor" + PageRenderer.languageQuery(request.language), cookies: [stepCookie(token)])
    }

    func stepCookie(_ value: String) -> String {
        let cookie = SetCookie(Self.cookie, value, path: "/signin", maxAge: Int(Self.lifetime), sameSite: .lax, secure: secureCookies)
        return value.isEmpty ? cookie.cleared.header : cookie.header
    }

    /// The step this browser holds: one cookie, ours, unexpired.
    func openStep(_ request: RequestContext) -> SecondFactorSeal.SecondStep? {
        let tokens = request.http.cookieValues(named: Self.cookie)
        guard tokens.count == 1 else { return nil }
        return seal.openStepToken(tokens[0], now: now(), lifetime: Self.lifetime)
    }
}

