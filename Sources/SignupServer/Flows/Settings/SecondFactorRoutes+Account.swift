import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

extension SecondFactorRoutes {
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

    func setupPage(_ request: RequestContext, _ account: Account, secret: [UInt8], error: String? = nil,
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
    enum SwitchOn {
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
    func switchOn(_ request: RequestContext, _ account: Account, secret: [UInt8], typed: String, action: String) -> SwitchOn {
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
}
