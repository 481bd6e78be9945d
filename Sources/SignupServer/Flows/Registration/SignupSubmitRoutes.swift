import Foundation
import Identity
import Logging
import MicroHTTPD
import ReactiveValidation
import SignupDomain
import SignupWire
import WebKernel

/// `POST /signup`: the plain form post that creates an account, with or without JavaScript.
struct SignupSubmitRoutes: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `providers`, `providerCookies`, `refusals`, `sessions`,
    /// `store`, `availability`, `hashing`, `signedIn`, `limiters`, `metrics`, `logger`, `now`, `returnTo`,
    /// `webhooks`, `proofs`, `proofOfWork`, `lookups`.
    let services: Services

    /// Where a new account goes first when the policy requires a second factor.
    let funnel: SignInFunnel

    init(_ services: Services) {
        self.services = services
        funnel = SignInFunnel(services)
    }

    /// One sign-up as it is handled: its request, and the credential its form chose.
    private struct Submission {
        let request: RequestContext
        let credential: CredentialMethod
        /// Where the page that comes back sends the person on (a pending sign-up's own).
        var returnTarget: String?
        /// With `provider`: who the provider said the person is, and the provider.
        var identity: (held: ProviderCookies.Identity, provider: ConfiguredProvider)?

        init(_ request: RequestContext, credential: CredentialMethod = .password) {
            self.request = request
            self.credential = credential
            returnTarget = request.returnTarget
        }
    }

    /// `POST /signup`.
    func submit(_ request: RequestContext) -> HTTPResponse {
        // Password (the default, and a form without JavaScript) or a passkey made on the form.
        let form = request.form
        guard let method = form[CredentialMethod.fieldName].map({ CredentialMethod(rawValue: $0) }) ?? .password else {
            let known = CredentialMethod.allCases.map(\.rawValue).joined(separator: " or ")
            return APIError(status: .badRequest, code: "invalid_credential",
                            message: "The credential must be \(known), not '\(form[CredentialMethod.fieldName]!)'.").response
        }
        var submission = Submission(request, credential: method)
        if method == .provider {
            // Only while this browser holds the provider's answer: no cookie, no provider sign-up.
            guard let identity = providerCookies.identity(in: request.http, for: .signup),
                  let provider = providers[identity.provider] else {
                count(.invalid, Submission(request))
                return rerender(Submission(request), values: Self.typedValues(request), evaluation: nil, token: form["token"],
                                status: .unprocessableContent,
                                formError: request.text("provider.error.expired_signup", ["provider": .text(request.text("provider.generic_name"))]))
            }
            submission.identity = (identity, provider)
        }
        return submit(submission)
    }

    /// What the form holds, passwords left out (for a page sent back before any check).
    private static func typedValues(_ request: RequestContext) -> [SignupField: String] {
        Dictionary(uniqueKeysWithValues: request.policy.fieldOrder.filter { !$0.isSecret }.map { ($0, request.form[$0.rawValue] ?? "") })
    }

    private func submit(_ submission: Submission) -> HTTPResponse {
        let request = submission.request, form = request.form, policy = request.policy, credential = submission.credential
        let clientKey = request.clientKey
        // Every declared field's value (a checkbox left unticked is not posted: ""). One
        // normal form for passwords, so the same password typed either way verifies. With a
        // passkey, passwords are not part of the sign-up (whatever a browser filled in).
        let values = Dictionary(uniqueKeysWithValues: policy.fieldOrder.map { field in
            let value = field.isSecret && credential != .password ? "" : form[field.rawValue] ?? ""
            return (field, field.isSecret ? value.canonicallyComposed : value)
        })
        let username = values[.username] ?? ""
        let password = values[.password] ?? ""

        do throws(LimitExceeded) {
            try limiters.signups.admit(clientKey)
        } catch {
            count(.rateLimited, submission)
            return slowDown(submission, error, values: values, token: form["token"])
        }
        // Any token this server issued, however old: the person may have typed for hours,
        // or the server restarted meanwhile. Its session, if it has one, is reused.
        guard let token = form["token"], sessions.isGenuine(token) else {
            count(.invalid, submission)
            return rerender(submission, values: values, evaluation: nil, status: .unprocessableContent,
                            formError: request.text("error.expired"))
        }
        if let proofOfWork {
            countInFunnel(submission) { $1.enter(.proofOfWork, &$0) }
            do throws(ProofOfWorkGate.Refusal) {
                _ = try proofOfWork.check(form[ProofOfWorkGate.field], token: token, addressKey: clientKey,
                                          issuedAt: sessions.issueDate(of: token))
            } catch {
                count(.unproved, submission)
                return proofRefused(submission, error, values: values, token: token)
            }
            countInFunnel(submission) { $1.finish(.proofOfWork, &$0) }
        }
        let session = sessions.existingSession(for: token)
        do {
            if try session?.createdAccountUsername != nil || store.isFormTokenUsed(token) {
                count(.alreadyUsed, submission)
                return alreadyUsed(submission, values: values)
            }
        } catch {
            logger.error("Account store unavailable during sign-up", metadata: ["error": "\(error)"])
            count(.unavailable, submission)
            return unavailable(submission, values: values, token: token)
        }

        // The username check costs what a live check costs, so posting forms is no faster a
        // way to learn which names are taken than typing them.
        do throws(LimitExceeded) {
            try limiters.lookupsPerSession.admit(token)
            try limiters.lookupsPerAddress.admit(clientKey)
        } catch {
            count(.rateLimited, submission)
            return slowDown(submission, error, values: values, token: token)
        }

        // The browser's button state is never trusted: check everything again, with the same
        // rules the live view model uses.
        let availability: RequirementState
        do {
            metrics.availabilityChecks.increment()
            availability = try self.availability.availabilityNow(of: username)
        } catch {
            logger.error("Account store unavailable during sign-up", metadata: ["error": "\(error)"])
            count(.unavailable, submission)
            return unavailable(submission, values: values, token: token)
        }
        guard policy.passwordBreach != nil || policy.emailDeliverable != nil else {
            return checked(submission, values: values, availability: availability, breach: nil, deliverable: nil, token: token,
                           session: session)
        }
        // A breach look-up or a DNS question can take its source's whole timeout: they run on
        // their own threads and the answer follows from there, never holding a request thread.
        let email = values[.email] ?? ""
        return .later { [self] respond in
            lookups.breachState(for: password, in: policy) { [self] breach in
                lookups.deliverableState(for: email, in: policy) { [self] deliverable in
                    // Off the resolver's thread, which only relays answers.
                    DispatchQueue.global().async { [self] in
                        checked(submission, values: values, availability: availability, breach: breach,
                                deliverable: deliverable, token: token, session: session).deliver(to: respond)
                    }
                }
            }
        }
    }

    /// The submission with every answer in: its 422, or the account once the password is
    /// hashed.
    private func checked(_ submission: Submission, values: [SignupField: String], availability: RequirementState,
                         breach: RequirementState?, deliverable: RequirementState?, token: String,
                         session: LiveFormSession?) -> HTTPResponse {
        let policy = submission.request.policy, credential = submission.credential, clientKey = submission.request.clientKey
        // The passkey made on this form, if any: with a password it is kept as well.
        let passkey = session?.passkey
        let evaluation = policy.evaluateSubmission(
            values: values, usernameAvailability: availability, breach: breach, deliverable: deliverable,
            credential: CredentialChoice(method: credential, passkeyCreated: credential == .provider || passkey != nil),
            breaches: lookups.breachedPasswords)
        guard evaluation.isValid else {
            // A double click: the other post of this form made the account (and so took the
            // name) while this one was on its way. It is told what happened, not "taken".
            if availability == .unmet, wasUsedMeanwhile(token) {
                count(.alreadyUsed, submission)
                return alreadyUsed(submission, values: values)
            }
            count(availability == .unmet ? .taken : .invalid, submission, evaluation: evaluation)
            return rerender(submission, values: values, evaluation: evaluation, token: token, status: .unprocessableContent)
        }
        let password = values[.password] ?? ""
        // Through a provider: the address is proved when the provider said so, the operator
        // trusts it to now (read from the configuration, not the cookie), and the form still
        // has that address.
        let provedByProvider = submission.identity.map { identity in
            identity.held.providerSaysVerified && identity.provider.declaration.trustsEmailVerified
                && EmailAddress.canonical(values[.email] ?? "") == EmailAddress.canonical(identity.held.email)
        } ?? false
        if credential == .provider {
            guard provedByProvider || proofs == nil else {
                count(.invalid, submission)
                return rerender(submission, values: values, evaluation: evaluation, token: token, status: .forbidden,
                                formError: submission.request.text("provider.error.needs_proof", ["provider": .name(submission.identity?.provider.name ?? "")]))
            }
            return finishSignup(submission, .success(Account.unusablePasswordHash), values: values, token: token,
                                session: session, passkey: nil, provedAt: provedByProvider ? now() : nil)
        }
        if let proofs {
            // Before the hash: a sign-up that may not mail costs no hash.
            do throws(LimitExceeded) {
                try proofs.admitMail(to: values[.email] ?? "", client: clientKey)
            } catch {
                count(.rateLimited, submission)
                return slowDown(submission, error, values: values, token: token)
            }
        }
        if credential == .passkey {
            // Nothing to hash: the account cannot be signed in to with a password.
            return finishSignup(submission, .success(Account.unusablePasswordHash), values: values, token: token,
                                session: session, passkey: passkey)
        }
        return .later { [self] respond in
            do throws(HashingRefusal) {
                try hashing.hash(password, client: clientKey) { result in
                    respond(finishSignup(submission, result, values: values, token: token, session: session, passkey: passkey))
                }
            } catch {
                respond(hashingRefused(submission, error, values: values, token: token))
            }
        }
    }

    /// Stores the account once its password is hashed (runs on the hashing queue).
    private func finishSignup(_ submission: Submission, _ hash: Result<String, Error>, values: [SignupField: String],
                              token: String, session: LiveFormSession?, passkey: NewPasskey?, provedAt: Date? = nil) -> HTTPResponse {
        let request = submission.request, language = request.language
        let passwordHash: String
        switch hash {
        case .success(let value): passwordHash = value
        case .failure(let refusal as HashingRefusal):
            return hashingRefused(submission, refusal, values: values, token: token)
        case .failure(let error):
            logger.error("Password hashing failed", metadata: ["error": "\(error)"])
            count(.unavailable, submission)
            return unavailable(submission, values: values, token: token)
        }
        do {
            proofOfWork?.pricing.record(.signup, addressKey: request.clientKey)
            let link = submission.identity.map { identity in
                NewProviderLink(provider: identity.provider.id, issuer: identity.held.issuer, subject: identity.held.subject,
                                email: identity.held.email)
            }
            if let proofs, link == nil {
                try proofs.start(username: values[.username] ?? "", email: values[.email] ?? "", passwordHash: passwordHash,
                                 profile: profile(of: values, policy: request.policy), formToken: token, language: language,
                                 returnTo: request.returnTarget,
                                 passkey: passkey, ranJavaScript: session != nil)
                count(.pending, submission)
                countInFunnel(submission) { $1.waitForAddressProof(&$0) }
                logger.info("Sign-up waiting for its address to be proved")
                var query = "?token=\(token)"
                if language.tag != Languages.fallback { query += "&lang=\(language.tag)" }
                return Pages.redirect(to: "/verify" + query, cookies: [proofs.browserCookie(for: token, secure: signedIn.secureCookies)])
            }
            let account = try store.createAccount(NewAccount(
                username: values[.username] ?? "", email: values[.email] ?? "", passwordHash: passwordHash,
                formToken: token, profile: profile(of: values, policy: request.policy), announce: webhooks != nil, passkey: passkey,
                providerLink: link, emailVerifiedAt: provedAt))
            webhooks?.nudge()
            session?.markAccountCreated(username: account.username)
            count(.created, submission)
            let age = sessions.age(of: token)
            countInFunnel(submission) { $1.complete(&$0, seconds: age) }
            if let identity = submission.identity { metrics.provider(identity.provider.id, "signed_up") }
            var said: Logger.Metadata = ["event": "account_created", "account": "\(account.id)",
                                         "method": "\(submission.credential.rawValue)", "client": "\(request.client)"]
            if let identity = submission.identity { said["provider"] = "\(identity.provider.id)" }
            logger.notice("Account created", metadata: said)
            // The provider's answer is used up: the cookie goes with the sign-up.
            let clearIdentity = submission.identity == nil ? [] : [providerCookies.identityCookie(nil)]
            // Signed in at once; if the session cannot be stored, the account still exists and
            // the sign-in page is where its owner goes next.
            do {
                // A policy that requires a second factor: set up before the first session.
                switch try funnel.finish(account, proved: .newAccount, request, returnTo: .some(submission.returnTarget)) {
                case .secondStep(var step):
                    for cookie in clearIdentity { step.headers.add("Set-Cookie", cookie) }
                    return step
                case .signedIn(let session):
                    return Pages.redirect(to: submission.returnTarget ?? "/welcome" + PageRenderer.languageQuery(language),
                                          cookies: session + clearIdentity)
                }
            } catch {
                logger.error("Account created, but its signed-in session could not be stored", metadata: ["error": "\(error)"])
                return Pages.redirect(to: "/signin" + PageRenderer.languageQuery(language))
            }
        } catch AccountCreationError.formAlreadyUsed {
            count(.alreadyUsed, submission)
            return alreadyUsed(submission, values: values)
        } catch ProviderLinkError.linkedElsewhere {
            count(.invalid, submission)
            return rerender(submission, values: values, evaluation: nil, token: token, status: .conflict,
                            formError: request.text("provider.error.linked_elsewhere", ["provider": .name(submission.identity?.provider.name ?? "")]))
        } catch PasskeyError.credentialExists {
            count(.invalid, submission)
            return rerender(submission, values: values, evaluation: nil, token: token, status: .conflict,
                            formError: request.text("passkey.error.exists"))
        } catch AccountCreationError.usernameTaken where wasUsedMeanwhile(token) {
            count(.alreadyUsed, submission)
            return alreadyUsed(submission, values: values)
        } catch AccountCreationError.usernameTaken {
            count(.taken, submission)
            // Someone else got the name between the check and the insert.
            var kept = values
            kept[.password] = ""
            kept[.confirm] = ""
            let evaluation = request.policy.evaluateSubmission(values: kept, usernameAvailability: .unmet)
            let usernameOnly = evaluation.problems.filter { $0.field == .username }
            return rerender(submission, values: values, evaluation: evaluation, errors: usernameOnly,
                            token: token, status: .unprocessableContent)
        } catch {
            // Includes StorageFault: the database file was deleted, replaced or unusable, so
            // the account is not acknowledged; the person keeps what they typed.
            logger.error("Account store failed during sign-up; nothing was saved", metadata: ["error": "\(error)"])
            count(.unavailable, submission)
            return unavailable(submission, values: values, token: token)
        }
    }

    // MARK: The funnel (issue 59)

    /// Counts `outcome` in `livesignup_signups_total` and, for a refusal, in the funnel, by the
    /// form's language, credential and JavaScript. A refused `evaluation` is what a form
    /// posted without JavaScript is left with, should it be abandoned now.
    private func count(_ outcome: SignupOutcome, _ submission: Submission, evaluation: FormEvaluation? = nil) {
        metrics.signup(outcome)
        guard outcome != .created, outcome != .pending else { return }
        // A post over its address's limits begins no form: posts past a limit must not fill
        // the table of forms without JavaScript (nor make up abandoned ones).
        let counted = countInFunnel(submission, beginning: outcome != .rateLimited) { progress, funnel in
            if let evaluation { progress.unmet = evaluation.unmetRequirements(of: submission.request.policy) }
            funnel.refused(outcome, progress.dimensions)
        }
        // A post naming no form of this server's is refused all the same.
        if !counted {
            formFunnel.refused(outcome, formFunnel.dimensions(language: submission.request.language.tag,
                                                              credential: submission.credential, javascript: false))
        }
    }

    /// Runs `body` on the funnel of the form posted: its live session's (its page ran
    /// JavaScript) or, without one, the one `FormFunnel` keeps by the form's token (begun now
    /// unless `beginning` is false). False, and nothing run, when there is no such form.
    @discardableResult
    private func countInFunnel(_ submission: Submission, beginning: Bool = true,
                               _ body: (inout FunnelProgress, FormFunnel) -> Void) -> Bool {
        guard let token = submission.request.form["token"], !token.isEmpty else { return false }
        let credential = submission.credential
        if let session = sessions.existingSession(for: token) {
            return session.countInFunnel { progress, funnel in
                progress.dimensions.credential = credential
                body(&progress, funnel)
            }
        }
        guard sessions.isGenuine(token) else { return false }
        let funnel = formFunnel
        return funnel.noScriptForm(token, funnel.dimensions(language: submission.request.language.tag, credential: credential,
                                                            javascript: false), at: now(), beginning: beginning) { body(&$0, funnel) }
    }

    /// `POST /verify/change`: the person wants to use another address. Only the browser that
    /// signed up may (its cookie, `AddressProofs.browserCookie`): the token alone travels in
    /// URLs, and whoever holds it must neither cancel the sign-up nor read the address. There,
    /// the pending sign-up is forgotten (the username released) and the form comes back with
    /// the username, the address shown masked for the person to type the new one, under the
    /// same token.
    func changeAddress(_ request: RequestContext) -> HTTPResponse {
        var submission = Submission(request)
        guard let token = request.form["token"], sessions.isGenuine(token) else {
            return rerender(submission, values: [:], evaluation: nil, status: .unprocessableContent,
                            formError: request.text("error.expired"))
        }
        var values: [SignupField: String] = [:]
        var errors: [(field: SignupField, message: String)] = []
        do {
            if let pending = try store.pendingSignup(formToken: token, at: now()) {
                guard let proofs, proofs.isFromTheBrowserThatSignedUp(request.http, formToken: token) else {
                    logger.notice("Address change refused: not the browser that signed up")
                    return request.pages.problem(title: request.text("verify.title"), message: request.text("verify.change_elsewhere"),
                                                 code: "other_browser", status: .forbidden)
                }
                values[.username] = pending.username
                errors = [(.email, request.text("verify.change_hint", ["address": .name(EmailAddress.masked(pending.email))]))]
                try store.cancelPendingSignup(formToken: token)
                // The form is open again (a live one's session does the same when it is shown).
                countInFunnel(submission) { $1.resume(&$0) }
                submission.returnTarget = returnTo.validated(pending.returnTo, for: request.http)
            }
        } catch {
            logger.error("Account store unavailable while changing an address", metadata: ["error": "\(error)"])
            return unavailable(submission, values: values, token: token)
        }
        return rerender(submission, values: values, evaluation: nil, errors: errors, token: token, status: .ok)
    }

    /// A proof of work refused, or none and the budget without JavaScript spent: the form
    /// again with what was typed, a fresh challenge, and why.
    private func proofRefused(_ submission: Submission, _ refusal: ProofOfWorkGate.Refusal, values: [SignupField: String],
                              token: String) -> HTTPResponse {
        let message = submission.request.proofRefusalMessage(refusal, signingIn: false, refusals: refusals)
        if submission.request.wantsJSON { return refusal.json(message: message) }
        switch refusal {
        case .overBudget(let exceeded):
            return rerender(submission, values: values, evaluation: nil, token: token, status: .tooManyRequests,
                            retryAfter: exceeded.retryAfterSeconds, formError: message)
        case .storeUnavailable:
            return unavailable(submission, values: values, token: token)
        case .proof(let reason):
            return rerender(submission, values: values, evaluation: nil, token: token, status: reason.status, formError: message)
        }
    }

    private func hashingRefused(_ submission: Submission, _ refusal: HashingRefusal, values: [SignupField: String],
                                token: String) -> HTTPResponse {
        count(refusal == .clientBusy ? .rateLimited : .unavailable, submission)
        switch refusal {
        case .clientBusy:
            return slowDown(submission, LimitExceeded(limit: .hashing, retryAfter: 2), values: values, token: token)
        case .queueFull:
            logger.warning("Refused a sign-up: the password hashing queue is full")
            return unavailable(submission, values: values, token: token)
        case .shuttingDown:
            return rerender(submission, values: values, evaluation: nil, token: token,
                            status: .serviceUnavailable, retryAfter: 5,
                            formError: submission.request.text("error.restarting"))
        }
    }

    /// Whether this form made an account since its post was first checked (a store that
    /// cannot answer counts as no: the page says what it would have said).
    private func wasUsedMeanwhile(_ token: String) -> Bool {
        (try? store.isFormTokenUsed(token)) == true
    }

    private func alreadyUsed(_ submission: Submission, values: [SignupField: String]) -> HTTPResponse {
        rerender(submission, values: values, evaluation: nil, status: .conflict,
                 formError: submission.request.text("error.already_used"))
    }

    private func unavailable(_ submission: Submission, values: [SignupField: String], token: String) -> HTTPResponse {
        rerender(submission, values: values, evaluation: nil, token: token, status: .serviceUnavailable,
                 retryAfter: 10,
                 formError: submission.request.text("error.unavailable"))
    }

    /// 429: the form again, with what was typed (never passwords) and when to try again.
    private func slowDown(_ submission: Submission, _ exceeded: LimitExceeded, values: [SignupField: String],
                          token: String?) -> HTTPResponse {
        refusals.count(exceeded)
        let request = submission.request
        return rerender(submission, values: values, evaluation: nil,
                        token: token.flatMap { sessions.isGenuine($0) ? $0 : nil },
                        status: .tooManyRequests, retryAfter: exceeded.retryAfterSeconds,
                        formError: request.text("error.slow_down", ["wait": .text(request.waitPhrase(exceeded.retryAfterSeconds))]))
    }

    /// The sign-up page again, with the person's username and email (never passwords), an
    /// error summary and each field's message. Keeps the form's token when it is genuine
    /// (and its live session, if it has one), so the live page carries on after the reload.
    private func rerender(
        _ submission: Submission,
        values: [SignupField: String], evaluation: FormEvaluation?,
        errors: [(field: SignupField, message: String)]? = nil,
        token: String? = nil, status: HTTPStatus,
        retryAfter: Int? = nil, formError: String = ""
    ) -> HTTPResponse {
        let request = submission.request, credential = submission.credential
        // The page that comes back counts its edits from zero again: its session (if the
        // token has one) must forget the old sequence numbers, or they would shadow them.
        let session = token.flatMap { sessions.existingSession(for: $0) }
        session?.prepareForResubmission(values: values, credential: credential)
        let states = evaluation?.requirementStates ?? request.policy.initialEvaluation.requirementStates
        let problems = errors ?? evaluation?.problems ?? []
        var page = SignupPage(
            token: token ?? sessions.mintToken(),
            values: values,
            requirementStates: states,
            messages: Dictionary(problems.map { ($0.field, $0.message) }, uniquingKeysWith: { first, _ in first }),
            strength: .none,
            errors: problems,
            formError: formError,
            returnTo: submission.returnTarget ?? "",
            suggestions: evaluation?.suggestions ?? [:])
        page.credential = credential
        page.passkeyCreated = session?.passkey != nil
        page.provider = credential == .provider ? submission.identity?.provider.name : nil
        // A fresh challenge: the one this form posted is spent (or was refused).
        page.challenge = proofOfWork?.challenge(for: page.token, addressKey: request.clientKey).json ?? ""
        let headers = retryAfter.map { HTTPHeaders([("Retry-After", String($0))]) } ?? HTTPHeaders()
        return request.page(page, status: status, headers: headers)
    }

    /// What the account keeps of the declared fields marked `stored` (never a password).
    private func profile(of values: [SignupField: String], policy: FormPolicy) -> [String: ProfileValue] {
        var profile: [String: ProfileValue] = [:]
        let now = now()
        for field in policy.fields where !field.kind.isBuiltIn {
            profile.merge(DeclaredFieldRules.profileEntries(for: field.declaration, value: values[field.field] ?? "", at: now)) { $1 }
        }
        return profile
    }

}
