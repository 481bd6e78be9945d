import Dispatch
import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// `/recover`: the way back into an account whose owner forgot the password, by a code or
/// link mailed to the account's proved address, ending in the live new-password form.
///
/// - `GET /recover`: one field, the username or the email address.
/// - `POST /recover`: the same page ("if an account exists, we sent a code"), in the same
///   time, whether or not an account matched: a recovery is stored either way, a stand-in
///   that nothing completes when none did (`AccountRecovery`). Limits per client (visible),
///   per account and per recipient (silent: the page says the same and nothing is mailed).
/// - `POST /recover/code`: a right code opens the new-password form in this browser (a
///   secret in a cookie for `/recover` only); wrong ones are counted, five at most.
/// - `GET /recover?link=…`: the link's secret leaves the URL at once, into the same cookie,
///   and a `303` leads to the form. A GET never spends anything: a mail scanner opening the
///   link leaves it usable.
/// - `GET /recover/password`: the live form, the sign-up form's password fields with the
///   same checklist, strength and stream, judged against this account (`FormPolicy.account`).
/// - `POST /recover/password`: the new password, checked again on the server; not the
///   current one; then stored, every signed-in session of the account ended, this browser
///   signed in, the owner told by mail, `account.password_reset` sent.
struct RecoveryRoutes: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `refusals`, `store`, `sessions`, `hashing`, `signedIn`,
    /// `limiters`, `lookups`, `metrics`, `logger`, `webhooks`, `now`, `proofOfWork`.
    let services: Services
    let proofs: AddressProofs
    /// The new-password form's page and its live session (shared with `/account`'s forms).
    let forms: AccountFormPages
    /// The lane recovery mails go out on (`OutboxChannel.accountMail`).
    let mails: OutboxDelivery
    /// Where a completed recovery goes: the second step or a session.
    let funnel: SignInFunnel
    /// With a second factor on, its code is judged before the new password is stored.
    let check: SecondFactorCheck
    /// How soon `POST /recover` may answer once it looked for an account (`Configuration.recoveryAnswerFloor`).
    let answerFloor: TimeInterval

    /// Nil when no mail can be sent (`--email-verification off`): the routes are then 404.
    init?(_ services: Services) {
        self.services = services
        guard let proofs = services.outbox.proofs, let mails = services.outbox.accountMails else { return nil }
        self.proofs = proofs
        self.mails = mails
        forms = AccountFormPages(sessions: services.form.sessions, refusals: services.site.refusals)
        answerFloor = services.configuration.recoveryAnswerFloor
        funnel = SignInFunnel(services)
        check = SecondFactorCheck(services)
    }

    private var settings: EmailVerificationSettings { proofs.settings }

    /// The cookie that carries a mailed link's secret, or the secret a right code gave this
    /// browser, from the page that received it to the new-password form (path `/recover`,
    /// for the recovery's lifetime, never readable by scripts).
    static let secretCookie = "livesignup_recover"

    /// The request form's field: a username or an email address.
    static let identifierField = RecoverPage.identifierField

    /// The new-password form's field for the second factor's code (the app's, or a recovery
    /// code), there when the account's factor is on.
    static let secondFactorField = "second_factor_code"

    // MARK: GET /recover

    func requestPage(_ request: RequestContext) -> HTTPResponse {
        if let link = request.http.queryValue("link") {
            // Only a value shaped like our links goes into a header (no `;`, no line break).
            guard link.isRandomToken else { return expired(request) }
            // The row adds `Referrer-Policy: no-referrer`; the URL with the secret is left
            // before anything renders or is looked up.
            return Pages.redirect(to: "/recover/password" + PageRenderer.languageQuery(request.language),
                                  cookies: [secretCookie(link)])
        }
        return recoverPage(request, RecoverPage(), status: .ok)
    }

    // MARK: POST /recover

    /// Starts a recovery for whatever account the identifier names, and answers the code form
    /// whether or not one does. Both paths do the same work in the same order (look up, spend
    /// the limits, write a mail, store a recovery in one transaction), and the answer waits
    /// for `answerFloor` (its connection suspended, no thread held), so the time does not tell
    /// them apart either (`RecoveryTests.testTheAnswerTakesAsLongForAnAccountAsForNone`).
    func start(_ request: RequestContext) -> HTTPResponse {
        let identifier = (request.form[Self.identifierField] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !identifier.isEmpty, identifier.utf8.count <= 320 else {
            metrics.recovery(.invalid)
            var page = RecoverPage(identifier: identifier)
            page.fieldError = request.text(identifier.isEmpty ? "recover.identifier_empty" : "recover.identifier_long")
            return recoverPage(request, page, status: .unprocessableContent)
        }
        if let proofOfWork {
            let token = request.form["token"].flatMap { sessions.isGenuine($0) ? $0 : nil } ?? ""
            do throws(ProofOfWorkGate.Refusal) {
                _ = try proofOfWork.check(request.form[ProofOfWorkGate.field], token: token, addressKey: request.clientKey,
                                          issuedAt: nil, withoutProof: limiters.noJavaScriptRecoveries)
            } catch {
                metrics.recovery(.unprovedClient)
                let message = proofRefusalMessage(error, request)
                if request.wantsJSON { return error.json(message: message) }
                var page = RecoverPage(identifier: identifier)
                page.formError = message
                switch error {
                case .overBudget(let exceeded):
                    return recoverPage(request, page, status: .tooManyRequests, retryAfter: exceeded.retryAfterSeconds)
                case .storeUnavailable:
                    return unavailable(request, error)
                case .proof(let reason):
                    return recoverPage(request, page, status: reason.status)
                }
            }
        }
        // The client's allowance is about the client, not the account: refusing it openly
        // says nothing about who has an account.
        do throws(LimitExceeded) {
            try limiters.mailsPerAddress.admit(request.clientKey)
        } catch {
            refusals.count(error)
            var page = RecoverPage(identifier: identifier)
            page.formError = request.text("recover.too_many").replacingOccurrences(
                of: "{wait}", with: request.waitPhrase(error.retryAfterSeconds))
            return recoverPage(request, page, status: .tooManyRequests, retryAfter: error.retryAfterSeconds)
        }
        let arrived = DispatchTime.now()
        let token = VerificationSecrets.makeLinkToken()
        do {
            let account = identifier.contains("@")
                ? try store.account(withProvedEmail: identifier) : try store.account(named: identifier)
            let time = now(), expiresAt = time.addingTimeInterval(settings.recoveryLifetime)
            let code = VerificationSecrets.makeCode(), link = VerificationSecrets.makeLinkToken()
            // Spent whatever matched, keyed by what matched or else by what was typed: a
            // made-up name costs the same round trips as a real one.
            let accountKey = account.map { "account:\($0.id)" } ?? "typed:" + Username.canonical(identifier)
            let recipientKey = EmailAddress.canonical(account?.email ?? identifier)
            var withinLimits = admitted(account: accountKey, recipient: recipientKey)
            // Strangers may have spent the account's allowance (issue 52): a request from a
            // network where the account is signed in has one of its own, so they cannot keep
            // the owner from recovering. (The answer waits for the same floor either way.)
            if !withinLimits, let account, try isKnownNetwork(request, of: account) {
                do throws(LimitExceeded) {
                    try limiters.recoveriesFromKnownNetworks.admit(accountKey)
                    withinLimits = true
                } catch {}
            }
            // The mail is written either way and dropped unless it goes: the same work.
            let mail = try proofs.mails.recovery(to: account?.email ?? identifier, username: account?.username ?? identifier,
                                                 code: code, link: link, language: request.language, at: time,
                                                 expiresAt: expiresAt)
            let outcome: RecoveryOutcome
            switch account {
            case let account? where account.emailVerifiedAt == nil:
                outcome = .unproved
                logger.notice("Recovery asked for an account whose address was never proved; nothing was mailed",
                              metadata: ["account": "\(account.id)", "client": "\(request.client)"])
            case let account? where account.disabledAt != nil:
                // A disabled account stays shut until the operator enables it: no way back in by mail.
                outcome = .disabled
                logger.notice("Recovery asked for a disabled account; nothing was mailed",
                              metadata: ["event": "recovery_refused", "account": "\(account.id)", "client": "\(request.client)"])
            case let account? where !withinLimits:
                outcome = .limited
                logger.notice("Recovery asked for too often for one account or address; nothing was mailed",
                              metadata: ["account": "\(account.id)", "client": "\(request.client)"])
            case .some:
                outcome = .mailed
            case nil:
                outcome = .noAccount
            }
            let mailsNow = outcome == .mailed
            try store.startRecovery(AccountRecovery(
                token: token, accountID: mailsNow ? account?.id : nil,
                codeHash: mailsNow ? proofs.secrets.codeHash(code, formToken: token) : VerificationSecrets.unmatchableHash(),
                linkHash: mailsNow ? proofs.secrets.linkHash(link) : VerificationSecrets.unmatchableHash(),
                language: request.language.tag, expiresAt: expiresAt, createdAt: time), mail: mailsNow ? mail : nil)
            if mailsNow {
                mails.nudge()
                logger.notice("Recovery code mailed", metadata: ["event": "recovery_mailed", "account": "\(account!.id)", "client": "\(request.client)"])
            }
            metrics.recovery(outcome)
        } catch {
            return unavailable(request, error)
        }
        let answer = codePage(request, token: token, status: .ok)
        let due = arrived + answerFloor
        guard DispatchTime.now() < due else { return answer }
        return .later { respond in DispatchQueue.global().asyncAfter(deadline: due) { respond(answer) } }
    }

    /// Whether the request comes from a network (the /24, or an IPv6 /48) where `account` has
    /// a live signed-in session: its owner's home or office, most likely.
    private func isKnownNetwork(_ request: RequestContext, of account: Account) throws -> Bool {
        let network = ClientKey.network(ofKey: request.clientKey)
        return try store.signInSessions(ofAccount: account.id, at: now(), rules: signedIn.rules).contains { $0.network == network }
    }

    /// Spends one from the account's and the recipient's allowances (both, always: the time
    /// must not say which was over). False when either was spent already.
    private func admitted(account: String, recipient: String) -> Bool {
        var within = true
        do throws(LimitExceeded) { try limiters.recoveriesPerAccount.admit(account) } catch { within = false }
        do throws(LimitExceeded) { try limiters.mailsPerRecipient.admit(recipient) } catch { within = false }
        return within
    }

    // MARK: POST /recover/code

    func checkCode(_ request: RequestContext) -> HTTPResponse {
        let token = request.form["token"] ?? "", typed = request.form["code"] ?? ""
        let clientKey = request.clientKey
        let recovery: AccountRecovery?
        do {
            recovery = token.isRandomToken ? try store.recovery(token: token, at: now()) : nil
        } catch {
            return unavailable(request, error)
        }
        guard let recovery else {
            metrics.recovery(.expired)
            return expired(request)
        }
        // After failures from this client a code pays a proof of work, as /verify does.
        if let proofOfWork, proofOfWork.pricing.needsProofAfterFailures(addressKey: clientKey) {
            do throws(ProofOfWorkGate.Refusal) {
                _ = try proofOfWork.check(request.form[ProofOfWorkGate.field], token: token, addressKey: clientKey, issuedAt: nil,
                                          withoutProof: limiters.noJavaScriptRecoveries)
            } catch {
                metrics.recovery(.unprovedClient)
                let message = proofRefusalMessage(error, request)
                if case .storeUnavailable = error { return unavailable(request, error) }
                let status: HTTPStatus
                switch error {
                case .overBudget: status = .tooManyRequests
                case .proof(let reason): status = reason.status
                case .storeUnavailable: status = .serviceUnavailable
                }
                return codePage(request, token: recovery.token, code: typed, formError: message, status: status)
            }
        }
        guard let code = VerificationCodeShape.normalized(typed) else {
            metrics.recovery(.invalid)
            return codePage(request, token: recovery.token, code: typed, fieldError: request.text("verify.code_shape"),
                            status: .unprocessableContent)
        }
        // The try is spent before the code is compared, in one atomic update.
        let tries: Int
        do {
            guard let spent = try store.spendRecoveryTry(token: recovery.token, maximum: settings.maximumWrongCodes, at: now()) else {
                metrics.recovery(.usedUp)
                return codePage(request, token: recovery.token, code: typed, fieldError: request.text("recover.code_used_up"),
                                status: .unprocessableContent)
            }
            tries = spent
        } catch {
            return unavailable(request, error)
        }
        // A daily budget of wrong codes per account, across all its recoveries (issue 52), spent
        // before the code is compared. Over it the code reads as wrong, the same answer as a
        // wrong code's (so the budget says nothing of whether an account exists); the mailed
        // link, a secret nobody guesses, still opens the form.
        let budgetKey = recovery.accountID.map { "account:\($0)" } ?? "recovery:" + recovery.token
        var withinBudget = true
        do throws(LimitExceeded) {
            try limiters.recoveryCodesPerAccount.admit(budgetKey)
        } catch where error.storeUnavailable {
            return unavailable(request, StorageFault("the shared limit on recovery codes could not be read"))
        } catch {
            withinBudget = false
        }
        // A stand-in's hash matches no code: its wrong codes read exactly like a real one's.
        guard withinBudget, !recovery.codeHash.isEmpty,
              proofs.secrets.codeMatches(code, formToken: recovery.token, storedHash: recovery.codeHash) else {
            metrics.recovery(.wrongCode)
            proofOfWork?.pricing.record(.wrongCode, addressKey: clientKey)
            let message = request.wrongCodeMessage(triesLeft: settings.maximumWrongCodes - tries, usedUp: "recover.code_used_up")
            return codePage(request, token: recovery.token, code: typed, fieldError: message, status: .unprocessableContent)
        }
        // The code is spent; a new secret, given to this browser only, opens the form.
        let secret = VerificationSecrets.makeLinkToken()
        do {
            guard try store.exchangeRecoveryCode(token: recovery.token, linkHash: proofs.secrets.linkHash(secret), at: now()) else {
                metrics.recovery(.expired)
                return expired(request)
            }
        } catch {
            return unavailable(request, error)
        }
        metrics.recovery(.codeAccepted)
        return Pages.redirect(to: "/recover/password" + PageRenderer.languageQuery(request.language),
                              cookies: [secretCookie(secret)])
    }

    // MARK: GET /recover/password

    /// The live new-password form for the recovery this browser holds. Looks, never spends.
    func passwordPage(_ request: RequestContext) -> HTTPResponse {
        let opened: (recovery: AccountRecovery, account: Account)?
        do { opened = try openedRecovery(request) } catch { return unavailable(request, error) }
        guard let opened else {
            metrics.recovery(.expired)
            return expired(request)
        }
        return newPasswordPage(request, account: opened.account, status: .ok)
    }

    // MARK: POST /recover/session

    /// A fresh live session for the form (its old one was dropped), as `POST /sessions` is
    /// for the sign-up form: `{"token": …}`.
    func renewSession(_ request: RequestContext) -> HTTPResponse {
        let opened: (recovery: AccountRecovery, account: Account)?
        do { opened = try openedRecovery(request) } catch {
            logger.error("Account store unavailable during recovery", metadata: ["error": "\(error)"])
            return request.storeUnavailable()
        }
        guard let opened else {
            return APIError(status: .gone, code: "recovery_expired",
                            message: expiredMessage(request)).response
        }
        return forms.freshSession(request, for: opened.account, rules: passwordRules(request))
    }

    // MARK: POST /recover/password

    func setPassword(_ request: RequestContext) -> HTTPResponse {
        let opened: (recovery: AccountRecovery, account: Account)?
        do { opened = try openedRecovery(request) } catch { return unavailable(request, error) }
        guard let (recovery, account) = opened else {
            metrics.recovery(.expired)
            return expired(request)
        }
        let policy = newPasswordPolicy(request, account)
        let values: [SignupField: String] = [.password: request.form["password"] ?? "", .confirm: request.form["confirm"] ?? ""]
        let password = (values[.password] ?? "").canonicallyComposed
        return .later { [self] respond in
            // The breach source may take its whole timeout: asked off the request threads.
            lookups.breachState(for: password, in: policy) { breach in
                @Sendable func evaluation(isCurrent: Bool) -> FormEvaluation {
                    policy.evaluateSubmission(
                        values: values, usernameAvailability: .met, breach: breach, breaches: lookups.breachedPasswords,
                        notCurrent: policy.passwordNotCurrent == nil ? nil : isCurrent ? .unmet : .met)
                }
                // Every other rule first: a password they refuse costs no hash.
                let otherwise = evaluation(isCurrent: false)
                guard otherwise.isValid else {
                    metrics.recovery(.refused)
                    return respond(newPasswordPage(request, account: account, problems: otherwise.problems,
                                                   status: .unprocessableContent))
                }
                // With a second factor on, its code before anything is hashed or stored, and
                // before any session ends (issue 52): the mailbox alone is one factor.
                let proof: SignInFunnel.Proof
                switch secondFactorCode(request, account) {
                case .notAsked: proof = .mailbox
                case .right: proof = .secondFactor
                case .answer(let response): return respond(response)
                }
                checkNotCurrent(password, of: account, request: request) { isCurrent in
                    guard !isCurrent else {
                        metrics.recovery(.currentPassword)
                        return respond(newPasswordPage(request, account: account,
                                                       problems: evaluation(isCurrent: true).problems,
                                                       status: .unprocessableContent))
                    }
                    store(password, for: account, recovery: recovery, proof: proof, request: request, respond: respond)
                }
            }
        }
    }

    /// What the new-password form's second-factor code did.
    private enum CodeOutcome {
        /// The account's factor is off: nothing to ask.
        case notAsked
        /// Right (and spent): the recovery is both factors.
        case right
        /// Missing, refused, over its allowance, or the store failed: the answer.
        case answer(HTTPResponse)
    }

    /// The code of an account whose factor is on, judged as at sign-in (`SecondFactorCheck`).
    private func secondFactorCode(_ request: RequestContext, _ account: Account) -> CodeOutcome {
        let factor: SecondFactor?
        do { factor = try store.secondFactor(ofAccount: account.id) } catch { return .answer(unavailable(request, error)) }
        guard let factor, factor.isEnabled else { return .notAsked }
        let typed = (request.form[Self.secondFactorField] ?? "").trimmingCharacters(in: .whitespaces)
        func asked(_ message: String, _ status: HTTPStatus) -> CodeOutcome {
            metrics.recovery(.secondFactorRefused)
            return .answer(newPasswordPage(request, account: account, codeMessage: message, status: status))
        }
        guard !typed.isEmpty else { return asked(request.text("second_factor.any_code_empty"), .unprocessableContent) }
        switch check.judge(typed, for: account, factor: factor, request) {
        case .right:
            return .right
        case .refused(let message, let status):
            return asked(message, status)
        case .limited(let exceeded):
            refusals.count(exceeded)
            var response = newPasswordPage(request, account: account, codeMessage: request.text("signin.too_many", ["wait": .text(request.waitPhrase(exceeded.retryAfterSeconds))]), status: .tooManyRequests)
            response.headers.add("Retry-After", String(exceeded.retryAfterSeconds))
            return .answer(response)
        case .unavailable(let error):
            return .answer(unavailable(request, error))
        }
    }

    /// Whether `password` (one every other rule accepts) is the account's password now
    /// (argon2id, in the sign-in lane); false for an account without one (passkeys only).
    private func checkNotCurrent(_ password: String, of account: Account, request: RequestContext,
                                 then completion: @escaping @Sendable (Bool) -> Void) {
        guard account.hasPassword else { return completion(false) }
        do throws(HashingRefusal) {
            try hashing.verify(password, against: account.passwordHash, client: request.clientKey) { outcome in
                completion((try? outcome.get()) == true)
            }
        } catch {
            completion(false)
        }
    }

    private func store(_ password: String, for account: Account, recovery: AccountRecovery, proof: SignInFunnel.Proof,
                       request: RequestContext, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        do throws(HashingRefusal) {
            try hashing.hash(password, client: request.clientKey) { [self] outcome in
                guard case .success(let hash) = outcome else {
                    metrics.recovery(.unavailable)
                    return respond(busy(request))
                }
                respond(complete(request, recovery: recovery, account: account, hash: hash, proof: proof))
            }
        } catch {
            metrics.recovery(.unavailable)
            respond(busy(request))
        }
    }

    /// Stores the hash (the recovery spent, every session of the account ended, the notice
    /// and the webhook written, in one transaction), then signs this browser in.
    /// `proof`: the mailbox, and the second factor's code when the account has one on.
    private func complete(_ request: RequestContext, recovery: AccountRecovery, account: Account, hash: String,
                          proof: SignInFunnel.Proof) -> HTTPResponse {
        let time = now(), language = request.language
        let announce = webhooks != nil
        // The owner is told at a proved address only (an operator's link may serve an account
        // whose address nobody proved: nothing goes there).
        let notice: OutboxEvent?
        do {
            notice = account.emailVerifiedAt == nil ? nil
                : try proofs.mails.passwordChanged(to: account.email, username: account.username, language: language, at: time)
        } catch {
            return unavailable(request, error)
        }
        let completed: CompletedRecovery
        do {
            guard let done = try store.completeRecovery(
                linkHash: recovery.linkHash, passwordHash: hash, at: time,
                events: { account in
                    (notice.map { [$0] } ?? []) + (announce ? [OutboxEvent.passwordReset(account, at: time)] : [])
                }) else {
                metrics.recovery(.expired)
                return expired(request)
            }
            completed = done
        } catch {
            return unavailable(request, error)
        }
        // This instance forgets the ended sessions at once; the others within their 5 s.
        signedIn.forgetSessions(ofAccount: account.id)
        mails.nudge()
        webhooks?.nudge()
        metrics.recovery(.completed)
        logger.notice("Password reset through recovery; every signed-in session of the account ended",
                      metadata: ["event": "password_reset", "account": "\(account.id)", "sessions_ended": "\(completed.endedSessions)",
                                 "client": "\(request.client)"])
        do {
            // The code was asked before the password was stored when the factor is on; under
            // `required`, an account without one sets it up at the step, before any session.
            var cookies: [String]
            switch try funnel.finish(completed.account, proved: proof, request) {
            case .secondStep(var step):
                step.headers.add("Set-Cookie", secretCookie(""))
                return step
            case .signedIn(let session):
                cookies = session
            }
            cookies.append(secretCookie(""))
            // To the account page, which lists every way in (passkeys, providers, the second
            // factor, devices): whoever got in may have added one, and only the owner can tell.
            return Pages.redirect(to: "/account?recovered=1" + AccountRoutes.languageParameter(request), cookies: cookies)
        } catch {
            logger.error("Password reset, but the signed-in session could not be stored", metadata: ["error": "\(error)"])
            return Pages.redirect(to: "/signin" + PageRenderer.languageQuery(language), cookies: [secretCookie("")])
        }
    }

    // MARK: Helpers

    /// What a refused proof of work says here (the sign-in's words would speak of failed
    /// sign-ins); a spent budget is counted, once.
    private func proofRefusalMessage(_ refusal: ProofOfWorkGate.Refusal, _ request: RequestContext) -> String {
        switch refusal {
        case .overBudget(let exceeded):
            refusals.count(exceeded)
            return request.text("recover.no_javascript", ["wait": .text(request.waitPhrase(exceeded.retryAfterSeconds))])
        case .storeUnavailable:
            return request.text("error.unavailable")
        case .proof(let reason):
            return request.text(reason.isStale ? "recover.proof_stale" : "recover.proof_refused")
        }
    }

    /// The recovery whose secret this browser's cookie holds, with its account; nil when
    /// there is none, it expired, was used, or is a stand-in.
    private func openedRecovery(_ request: RequestContext) throws -> (recovery: AccountRecovery, account: Account)? {
        let secrets = request.http.cookieValues(named: Self.secretCookie).filter(\.isRandomToken)
        // Two cookies: one was planted; neither is believed.
        guard secrets.count == 1 else { return nil }
        guard let recovery = try store.recovery(linkHash: proofs.secrets.linkHash(secrets[0]), at: now()),
              let id = recovery.accountID, let account = try store.account(id: id) else { return nil }
        return (recovery, account)
    }

    private func newPasswordPolicy(_ request: RequestContext, _ account: Account) -> FormPolicy {
        // What a new password is judged against: the account's name and address, and
        // whether it has a password the new one must differ from.
        request.policy.newPassword(for: .init(of: account))
    }

    private func secretCookie(_ value: String) -> String {
        let cookie = SetCookie(Self.secretCookie, value, path: "/recover", maxAge: Int(settings.recoveryLifetime), sameSite: .lax,
                               secure: signedIn.secureCookies)
        return value.isEmpty ? cookie.cleared.header : cookie.header
    }

    /// The live check lives as long as the recovery whose secret this browser holds.
    private func passwordRules(_ request: RequestContext) -> AccountFormPages.Rules {
        let secrets = request.http.cookieValues(named: Self.secretCookie).filter(\.isRandomToken)
        let linkHash = secrets.count == 1 ? proofs.secrets.linkHash(secrets[0]) : ""
        let store = store, now = now
        return AccountFormPages.newPasswordRules(hashing: hashing, client: request.clientKey, lifeline: .init(
            opened: now(), isOpen: { !linkHash.isEmpty && (try? store.recovery(linkHash: linkHash, at: now())) != nil }, now: now))
    }

    /// The live new-password form; with the account's second factor on, its code field too
    /// (`codeMessage`: why the code was refused).
    private func newPasswordPage(_ request: RequestContext, account: Account,
                                 problems: [(field: SignupField, message: String)] = [], codeMessage: String = "",
                                 status: HTTPStatus) -> HTTPResponse {
        let asksCode = (try? store.secondFactor(ofAccount: account.id))??.isEnabled == true
        var response = forms.page(request, for: account,
                                  rules: passwordRules(request),
                                  purpose: .recovery(username: account.username, asksSecondFactorCode: asksCode, message: codeMessage),
                                  problems: problems, status: status)
        response.headers.add("Vary", "Accept-Language")
        return response
    }

    private func recoverPage(_ request: RequestContext, _ page: RecoverPage, status: HTTPStatus,
                             retryAfter: Int? = nil) -> HTTPResponse {
        var page = page
        if let proofOfWork {
            let token = sessions.mintToken()
            page.proof = (token, proofOfWork.challenge(for: token, addressKey: request.clientKey).json)
        }
        var headers = HTTPHeaders()
        if let retryAfter { headers.add("Retry-After", String(retryAfter)) }
        return request.page(page, status: status, headers: headers)
    }

    private func codePage(_ request: RequestContext, token: String, code: String = "", fieldError: String = "",
                          formError: String = "", status: HTTPStatus) -> HTTPResponse {
        var page = RecoverPage()
        page.recoveryToken = token
        page.code = code
        page.fieldError = fieldError
        page.formError = formError
        if let proofOfWork, proofOfWork.pricing.needsProofAfterFailures(addressKey: request.clientKey) {
            page.proof = (token, proofOfWork.challenge(for: token, addressKey: request.clientKey).json)
        }
        var headers = HTTPHeaders()
        if status == .tooManyRequests { headers.add("Retry-After", "60") }
        return request.page(page, status: status, headers: headers)
    }

    /// 410: the code or link is unknown, used or expired (they look the same on purpose).
    private func expired(_ request: RequestContext) -> HTTPResponse {
        request.pages.problem(
            title: request.text("recover.expired_title"), message: expiredMessage(request), code: "recovery_expired", linkURL: "/recover", linkText: request.text("recover.again"), status: .gone)
    }

    private func expiredMessage(_ request: RequestContext) -> String {
        request.text("recover.expired_message")
            .filled(["minutes": .number(Int(settings.recoveryLifetime / 60))], in: request.language)
    }

    private func busy(_ request: RequestContext) -> HTTPResponse {
        request.storeUnavailable()
    }

    private func unavailable(_ request: RequestContext, _ error: Error) -> HTTPResponse {
        logger.error("Account store unavailable during recovery", metadata: ["error": "\(error)"])
        metrics.recovery(.unavailable)
        return request.storeUnavailable(retryAfter: 10)
    }
}
