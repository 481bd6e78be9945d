import Foundation
import Identity
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
    let providerLinks: ProviderLinker
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
        providerLinks = ProviderLinker(services)
        seal = services.signIn.secondFactorSeal
        announcer = AccountAnnouncer(services)
        gate = SecondStepGate(services)
        funnel = SignInFunnel(services)
        check = SecondFactorCheck(services)
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
    func enableAtSignIn(_ request: RequestContext, _ account: Account, secret: [UInt8], step: SecondFactorSeal.SecondStep,
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
    func proveTheFactor(_ request: RequestContext, _ account: Account) throws -> HTTPResponse? {
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
    func sessionAfterTheCode(_ account: Account, _ request: RequestContext) throws -> [String] {
        guard case .signedIn(let cookies) = try funnel.finish(account, proved: .secondFactor, request) else {
            preconditionFailure("two factors never take a second step")
        }
        return cookies
    }

    /// `second_factor: off`: nothing to set up here (a factor set up before can still be seen
    /// and removed).
    func notOffered(_ request: RequestContext) -> HTTPResponse {
        request.pages.problem(title: request.text("second_factor.setup_title"), message: request.text("second_factor.not_offered"),
                              code: "second_factor_not_offered", linkURL: "/account" + PageRenderer.languageQuery(request.language),
                              linkText: request.text("account.back"), status: .notFound)
    }

    func stepExpired(_ request: RequestContext) -> HTTPResponse {
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
    func chargeGuess(_ request: RequestContext, _ account: Account) -> HTTPResponse? {
        switch check.pay(for: account, request) {
        case nil, .right?, .refused?: return nil
        case .limited(let exceeded)?: return tooManyCodes(request, exceeded, page: .signIn)
        case .unavailable(let error)?: return refusals.storeUnavailable(request, error)
        }
    }

    /// 429 in the page's words, with when to try again.
    func tooManyCodes(_ request: RequestContext, _ exceeded: LimitExceeded, page: SecondFactorPage.Mode) -> HTTPResponse {
        refusals.count(exceeded)
        let message = request.text("signin.too_many", ["wait": .text(request.waitPhrase(exceeded.retryAfterSeconds))])
        var response = render(request, .init(mode: page, error: message), status: .tooManyRequests)
        response.headers.add("Retry-After", String(exceeded.retryAfterSeconds))
        return response
    }

    func wrongCodeText(_ request: RequestContext) -> String {
        request.text("second_factor.wrong")
    }

    /// "Your device's clock is about 120 seconds ahead…": what no identity server says.
    func clockText(_ request: RequestContext, _ seconds: Int) -> String {
        request.text(seconds > 0 ? "second_factor.clock_ahead" : "second_factor.clock_behind")
            .filled(["seconds": .number(abs(seconds))], in: request.language)
    }

    func render(_ request: RequestContext, _ page: SecondFactorPage, status: HTTPStatus) -> HTTPResponse {
        return request.page(page, status: status)
    }
}

