import Foundation
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// The sign-in's second step, between a right password (or a passkey that did not verify the
/// person) and a right code: the password's routes hand over here when the account's factor
/// is on. Nothing is stored: the step is a signed token (`SecondFactorSeal.stepToken`) in a
/// cookie only `/signin` reads, good for `lifetime` on any instance sharing the key.
package struct SecondStepGate: Sendable {
    package let logger: Logger
    package let now: @Sendable () -> Date
    package let seal: SecondFactorSeal
    package let secureCookies: Bool
    /// `required`: an account without a factor takes this step too, to set one up.
    package let rule: SecondFactorRule

    /// The cookie that carries the step.
    package static let cookie = "livesignup_second_step"
    /// How long the step waits for its code.
    package static let lifetime: TimeInterval = 5 * 60

    package init(seal: SecondFactorSeal, secureCookies: Bool, rule: SecondFactorRule, logger: Logger,
         now: @escaping @Sendable () -> Date) {
        self.seal = seal
        self.secureCookies = secureCookies
        self.rule = rule
        self.logger = logger
        self.now = now
    }

    /// The step for `account` (`SignInFunnel` decided it is needed): no session yet, the
    /// step's cookie, and the code page (`303`; under `required`, an account without a factor
    /// sets one up there).
    package func start(for account: Account, _ request: RequestContext, returnTo: String?) -> HTTPResponse {
        let token = seal.stepToken(.init(account: account.id, issuedAt: now(), returnTo: returnTo))
        logger.notice("The second factor asked for", metadata: ["event": "second_factor_asked", "account": "\(account.id)",
                                                               "client": "\(request.client)"])
        return Pages.redirect(to: "/signin/second-factor" + PageRenderer.languageQuery(request.language), cookies: [stepCookie(token)])
    }

    package func stepCookie(_ value: String) -> String {
        let cookie = SetCookie(Self.cookie, value, path: "/signin", maxAge: Int(Self.lifetime), sameSite: .lax, secure: secureCookies)
        return value.isEmpty ? cookie.cleared.header : cookie.header
    }

    /// The step this browser holds: one cookie, ours, unexpired.
    package func openStep(_ request: RequestContext) -> SecondFactorSeal.SecondStep? {
        let tokens = request.http.cookieValues(named: Self.cookie)
        guard tokens.count == 1 else { return nil }
        return seal.openStepToken(tokens[0], now: now(), lifetime: Self.lifetime)
    }
}
