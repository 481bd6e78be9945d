import Foundation
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// One typed code judged for an account whose second factor is on, the same wherever a code is
/// asked: the sign-in's second step, a recovery's new password, the factor's removal and new
/// recovery codes (issue 52). In order, each spent before the work it guards:
/// 1. paid for from this client's failure allowance and the account's code allowance (which
///    no right password refills);
/// 2. counted as wrong, in a row, in the store: at the policy's number the app's codes are
///    refused (a recovery code is still judged, and unlocks), and the owner is mailed at the
///    warning and at the lock;
/// 3. judged: the app's code (each step once; a code from the future spends its step, so the
///    clock hint never names a code accepted later) or a recovery code (each once);
/// 4. right: the client's allowance is given back and the in-a-row count starts again (the
///    account's allowance refills with time only). Wrong: it raises this client's proof-of-work
///    price as a wrong password does.
/// What a flow counts of it (a sign-in outcome, the proof of work's price) it is told through
/// `Outcomes`, so the check knows no flow.
package struct SecondFactorCheck: Sendable {
    package let store: any AccountStore
    package let limiters: ClientLimiters
    package let seal: SecondFactorSeal
    package let announcer: AccountAnnouncer
    package let lockout: SecondFactorLockout
    package let outcomes: Outcomes
    package let logger: Logger
    package let now: @Sendable () -> Date

    /// What the flows count: a code refused (`wrong`: the client's key, whose proof-of-work
    /// price rises as after a wrong password) and a guess over an allowance (`limited`).
    package struct Outcomes: Sendable {
        package let wrong: @Sendable (_ clientKey: String) -> Void
        package let limited: @Sendable () -> Void

        package init(wrong: @escaping @Sendable (_ clientKey: String) -> Void, limited: @escaping @Sendable () -> Void) {
            self.wrong = wrong
            self.limited = limited
        }
    }

    package init(store: any AccountStore, limiters: ClientLimiters, seal: SecondFactorSeal, announcer: AccountAnnouncer,
                 lockout: SecondFactorLockout, outcomes: Outcomes, logger: Logger, now: @escaping @Sendable () -> Date) {
        self.store = store
        self.limiters = limiters
        self.seal = seal
        self.announcer = announcer
        self.lockout = lockout
        self.outcomes = outcomes
        self.logger = logger
        self.now = now
    }

    /// What the code was.
    package enum Verdict {
        /// Right: the app's code (`appCode`) or a recovery code, now spent.
        case right(appCode: Bool)
        /// Refused, in the person's words, with its status (401 wrong, 403 locked).
        case refused(message: String, status: HTTPStatus)
        /// Over an allowance: wait `retryAfter`.
        case limited(LimitExceeded)
        /// The store could not answer (a shared limit included): no guess is judged unpaid.
        case unavailable(any Error)
    }

    /// Judges `typed` (not empty) for `account`, whose factor `factor` is on.
    package func judge(_ typed: String, for account: Account, factor: SecondFactor, _ request: RequestContext) -> Verdict {
        if let refused = pay(for: account, request) { return refused }
        let time = now()
        let isAppCode = typed.filter { !$0.isWhitespace }.allSatisfy(\.isNumber)
        do {
            let secret = try seal.open(factor.sealedSecret, account: account.id)
            // Counted as wrong before it is judged; a right code clears the count.
            let failures = try store.chargeSecondFactorCode(ofAccount: account.id, lockout: lockout,
                                                            notices: try notices(account, after: factor.failedCodes, request, at: time))
            if let failures, failures == lockout.wrongCodes || failures == lockout.warnAt { announcer.nudge() }
            if failures == lockout.wrongCodes {
                logger.notice("Second factor locked: too many wrong codes in a row", metadata: [
                    "event": "second_factor_locked", "account": "\(account.id)", "client": "\(request.client)"])
            }
            // Locked: the app's codes are not even compared (a recovery code still is, and unlocks).
            if failures == nil, isAppCode {
                return refused(request, account, request.text("second_factor.locked"), status: .forbidden)
            }
            if isAppCode {
                switch TOTP(secret: secret).match(typed, at: time) {
                case .wrong:
                    return refused(request, account, request.text("second_factor.wrong"))
                case .clockOff(let matched, let seconds):
                    // The hint names a code from the future: its step is spent now, so the code
                    // it names is never accepted later (a guesser learns nothing usable).
                    if seconds > 0 { _ = try store.spendSecondFactorStep(ofAccount: account.id, step: matched) }
                    return refused(request, account, request.text(seconds > 0 ? "second_factor.clock_ahead" : "second_factor.clock_behind")
                        .filled(["seconds": .number(abs(seconds))], in: request.language))
                case .accepted(let accepted):
                    guard try store.spendSecondFactorStep(ofAccount: account.id, step: accepted) else {
                        return refused(request, account, request.text("second_factor.replayed"))
                    }
                }
            } else {
                guard try store.spendRecoveryCode(ofAccount: account.id, hash: seal.recoveryCodeHash(typed, account: account.id)) else {
                    return refused(request, account, request.text("second_factor.recovery_wrong"))
                }
                logger.notice("A recovery code was used", metadata: ["event": "recovery_code_used", "account": "\(account.id)",
                                                                     "client": "\(request.client)"])
            }
            limiters.forgiveCodeGuess(clientKey: request.clientKey)
            try store.clearSecondFactorFailures(ofAccount: account.id)
            return .right(appCode: isAppCode)
        } catch {
            return .unavailable(error)
        }
    }

    /// Step 1 alone, for a code judged elsewhere (a setup's first code, before the factor is
    /// on): nil when paid; `.limited`, or `.unavailable` when the shared allowance cannot be read.
    package func pay(for account: Account, _ request: RequestContext) -> Verdict? {
        do throws(LimitExceeded) {
            try limiters.admitCodeGuess(clientKey: request.clientKey, accountKey: Username.canonical(account.username))
            return nil
        } catch where error.storeUnavailable {
            return .unavailable(StorageFault("the shared limit on codes could not be read"))
        } catch {
            outcomes.limited()
            return .limited(error)
        }
    }

    private func refused(_ request: RequestContext, _ account: Account, _ message: String,
                         status: HTTPStatus = .unauthorized) -> Verdict {
        outcomes.wrong(request.clientKey)
        logger.notice("A second factor's code refused", metadata: ["event": "second_factor_failed", "account": "\(account.id)",
                                                                   "client": "\(request.client)"])
        return .refused(message: message, status: status)
    }

    /// The owner's mails for the counts that matter, written by the count's own transaction
    /// only when it reaches them: a warning at `warnAt` wrong codes in a row, and the lock's
    /// notice (with its webhook) at `wrongCodes`. Made only while those counts are ahead.
    private func notices(_ account: Account, after failures: Int, _ request: RequestContext,
                         at time: Date) throws -> [Int: [OutboxEvent]] {
        var notices: [Int: [OutboxEvent]] = [:]
        if let warnAt = lockout.warnAt, failures < warnAt {
            notices[warnAt] = try announcer.events(.secondFactorWrongCodes, webhook: nil, for: account,
                                                   detail: .text(String(warnAt)), language: request.language, at: time)
        }
        if failures < lockout.wrongCodes {
            notices[lockout.wrongCodes] = try announcer.events(.secondFactorLocked, webhook: "account.second_factor_locked",
                                                               for: account, detail: .text(String(lockout.wrongCodes)),
                                                               language: request.language, at: time)
        }
        return notices
    }
}
