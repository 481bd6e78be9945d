import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel

/// `GET/POST /signin`: a small sign-in form that proves an account is real.
///
/// Guessing is slow and fair: after a few failures for one account, or from one address,
/// each further try must wait (429 with `Retry-After`); every failure is logged (the name
/// and address, never the password); and guesses wait in their own hashing lane, so they
/// cannot delay sign-ups. `GET /welcome` is the signed-in person's page.
struct SignInRoutes: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `refusals`, `store`, `hashing`, `signedIn`,
    /// `placeholderHash`, `limiters`, `metrics`, `logger`, `proofOfWork`, `sessions`.
    let services: Services
    /// Where a right password goes: the second step or a session.
    let funnel: SignInFunnel
    /// Whether a forgotten password can be recovered here (mail can be sent).
    let offersRecovery: Bool
    /// A provider's identity that waits for this sign-in to be linked (issue 45).
    let providerLinks: ProviderLinker

    init(_ services: Services) {
        self.services = services
        funnel = SignInFunnel(services)
        offersRecovery = services.outbox.proofs != nil
        providerLinks = ProviderLinker(services)
    }

    func signInPage(_ request: RequestContext, username: String, error: String?, status: HTTPStatus,
                    headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        request.page(SignInPage(username: username, errorMessage: error, returnTo: request.returnTarget,
                                proof: signInProof(for: request.clientKey), offersRecovery: offersRecovery,
                                notice: providerLinks.pendingNotice(request)),
                     status: status, headers: headers)
    }

    /// A token and challenge for the form, when this client must pay to sign in.
    private func signInProof(for clientKey: String) -> (token: String, challenge: String)? {
        guard let proofOfWork, proofOfWork.pricing.needsProofAfterFailures(addressKey: clientKey) else { return nil }
        let token = sessions.mintToken()
        return (token, proofOfWork.challenge(for: token, addressKey: clientKey).json)
    }

    /// `POST /signin`.
    func signIn(_ request: RequestContext) -> HTTPResponse {
        let form = request.form
        let client = request.client, clientKey = request.clientKey
        let username = form["username"] ?? ""
        let password = (form["password"] ?? "").canonicallyComposed
        guard !username.isEmpty, !password.isEmpty else {
            return signInPage(request, username: username, error: request.text("signin.empty"), status: .unprocessableContent)
        }
        // Keyed by the canonical name whether or not the account exists, so the limit does
        // not tell the two apart either.
        let accountKey = Username.canonical(username)
        do throws(LimitExceeded) {
            try limiters.signinFailuresPerAccount.ensureNotExhausted(accountKey)
            try limiters.signinFailuresPerAddress.ensureNotExhausted(clientKey)
        } catch {
            metrics.signin(.rateLimited)
            logger.notice("Sign-in refused: too many failures",
                          metadata: ["username": "\(username)", "client": "\(client)", "retryAfter": "\(error.retryAfterSeconds)"])
            return tooManySignIns(request, username: username, error)
        }
        // After failures from this client, a sign-in pays a proof of work: a guesser spread
        // over many accounts pays for every guess.
        if let proofOfWork, proofOfWork.pricing.needsProofAfterFailures(addressKey: clientKey) {
            let token = form["token"].flatMap { sessions.isGenuine($0) ? $0 : nil } ?? ""
            do throws(ProofOfWorkGate.Refusal) {
                _ = try proofOfWork.check(form[ProofOfWorkGate.field], token: token, addressKey: clientKey, issuedAt: nil)
            } catch {
                metrics.signin(.unproved)
                return signInProofRefused(request, error, username: username)
            }
        }
        let account: Account?
        do {
            account = try store.account(named: username)
        } catch {
            logger.error("Account store unavailable during sign-in", metadata: ["error": "\(error)"])
            metrics.signin(.unavailable)
            return signInPage(request, username: username, error: request.text("signin.unavailable"), status: .serviceUnavailable)
        }
        // Unknown names, and accounts without a password (passkeys only, reserved names), are
        // verified against a fixed hash too, so the answer takes as long whichever it is.
        let hash = account.map { $0.passwordHash == Account.unusablePasswordHash ? placeholderHash : $0.passwordHash }
            ?? placeholderHash
        // Every guess is paid for before it is hashed, and given back only when it was right.
        do throws(LimitExceeded) {
            try limiters.admitPasswordGuess(clientKey: clientKey, accountKey: accountKey)
        } catch {
            metrics.signin(.rateLimited)
            logger.notice("Sign-in refused: too many failures",
                          metadata: ["username": "\(username)", "client": "\(client)", "retryAfter": "\(error.retryAfterSeconds)"])
            return tooManySignIns(request, username: username, error)
        }
        return .later { [self] respond in
            do throws(HashingRefusal) {
                try hashing.verify(password, against: hash, client: clientKey) { outcome in
                    switch outcome {
                    case .success(true) where account?.disabledAt != nil && account!.hasPassword:
                        // Said only after the right password: a wrong one reads as for any account.
                        limiters.forgivePasswordGuess(clientKey: clientKey, accountKey: accountKey)
                        metrics.signin(.disabled)
                        logger.notice("Sign-in refused: the account is disabled",
                                      metadata: ["event": "signin_disabled", "account": "\(account!.id)", "client": "\(client)"])
                        respond(signInPage(request, username: username, error: request.text("signin.disabled"), status: .forbidden))
                    case .success(true) where account != nil && account!.passwordHash != Account.unusablePasswordHash:
                        limiters.forgivePasswordGuess(clientKey: clientKey, accountKey: accountKey)
                        do {
                            // The password was right: only now is a second factor asked for.
                            let session: [String]
                            switch try funnel.finish(account!, proved: .password, request) {
                            case .secondStep(let step): return respond(step)
                            case .signedIn(let cookies): session = cookies
                            }
                            let cookies = session + providerLinks.finishPending(for: account!, request)
                            metrics.signin(.success)
                            logger.notice("Signed in", metadata: ["event": "signin", "method": "password",
                                                                  "account": "\(account!.id)", "client": "\(client)"])
                            respond(Pages.redirect(to: request.returnTarget ?? "/welcome" + PageRenderer.languageQuery(request.language),
                                                   cookies: cookies))
                        } catch {
                            logger.error("Account store unavailable to start a signed-in session", metadata: ["error": "\(error)"])
                            metrics.signin(.unavailable)
                            respond(signInPage(request, username: username, error: request.text("signin.unavailable"),
                                               status: .serviceUnavailable,
                                               headers: HTTPHeaders([("Retry-After", "5")])))
                        }
                    case .success:
                        // Both limits were charged before the hash.
                        proofOfWork?.pricing.record(.failedSignin, addressKey: clientKey)
                        // The account's id when there is one: an operator follows an account by it.
                        logger.notice("Sign-in failed", metadata: ["event": "signin_failed", "username": "\(username)",
                                                                   "account": "\(account.map { String($0.id) } ?? "none")",
                                                                   "client": "\(client)"])
                        metrics.signin(.failure)
                        respond(signInPage(request, username: username, error: request.text("signin.failed"), status: .unauthorized))
                    case .failure(let refusal):
                        respond(signInRefused(request, refusal, username: username))
                    }
                }
            } catch {
                respond(signInRefused(request, error, username: username))
            }
        }
    }

    private func signInProofRefused(_ request: RequestContext, _ refusal: ProofOfWorkGate.Refusal,
                                    username: String) -> HTTPResponse {
        let message = request.proofRefusalMessage(refusal, signingIn: true, refusals: refusals)
        if request.wantsJSON { return refusal.json(message: message) }
        switch refusal {
        case .overBudget(let exceeded):
            return signInPage(request, username: username, error: message, status: .tooManyRequests,
                              headers: HTTPHeaders([("Retry-After", String(exceeded.retryAfterSeconds))]))
        case .storeUnavailable:
            return signInPage(request, username: username, error: message, status: .serviceUnavailable)
        case .proof(let reason):
            return signInPage(request, username: username, error: message, status: reason.status)
        }
    }

    private func tooManySignIns(_ request: RequestContext, username: String, _ exceeded: LimitExceeded) -> HTTPResponse {
        if exceeded.storeUnavailable {
            // The shared count of failures could not be read: no guess is judged without it.
            return signInPage(request, username: username, error: request.text("signin.unavailable"), status: .serviceUnavailable,
                              headers: HTTPHeaders([("Retry-After", String(exceeded.retryAfterSeconds))]))
        }
        refusals.count(exceeded)
        return signInPage(request, username: username,
                          error: request.text("signin.too_many", ["wait": .text(request.waitPhrase(exceeded.retryAfterSeconds))]),
                          status: .tooManyRequests,
                          headers: HTTPHeaders([("Retry-After", String(exceeded.retryAfterSeconds))]))
    }

    private func signInRefused(_ request: RequestContext, _ refusal: HashingRefusal, username: String) -> HTTPResponse {
        metrics.signin(refusal == .clientBusy ? .rateLimited : .unavailable)
        switch refusal {
        case .clientBusy:
            return tooManySignIns(request, username: username, LimitExceeded(limit: .hashing, retryAfter: 2))
        case .queueFull, .shuttingDown:
            return signInPage(request, username: username, error: request.text("signin.unavailable"),
                              status: .serviceUnavailable, headers: HTTPHeaders([("Retry-After", "5")]))
        }
    }

    /// `GET /signin`: the form, carrying a valid `return_to` along.
    func signInForm(_ request: RequestContext) -> HTTPResponse {
        // An application's `login_hint` (issue 56), passed on by the OpenID provider's
        // authorize endpoint: the name filled in, never more than a name's length.
        signInPage(request, username: String((request.http.queryValue("login_hint") ?? "").prefix(256)), error: nil, status: .ok)
    }

    // MARK: GET /welcome

    func welcome(_ request: RequestContext) -> HTTPResponse {
        guard let account = signedInAccount(request) else { return Pages.redirect(to: "/signin") }
        // The page works without the count (a store that cannot answer just hides it).
        let passkeys = try? store.passkeys(ofAccount: account.id).count
        return request.page(WelcomePage(username: account.username, passkeys: passkeys), status: .ok)
    }

    // MARK: POST /signout

    /// Ends the session on the server (every instance forgets it) and clears the cookie.
    func signOut(_ request: RequestContext) -> HTTPResponse {
        do {
            switch try signedIn.signOut(cookieHeader: request.cookieHeader, client: request.clientKey,
                                        unknownSessions: limiters.unknownSessions) {
            case .cleared(let cleared):
                return Pages.redirect(to: "/signin" + PageRenderer.languageQuery(request.language), cookies: cleared)
            case .limited(let exceeded):
                // Many cookies naming no live session from one client: a flood (a person's live
                // session is never refused). The answer is one line of text, cheaper than the
                // sign-out it refuses (a rendered page cost a debug build 3 ms, the read 0.4),
                // and the dead cookie is cleared all the same.
                refusals.count(exceeded)
                let message = request.text("error.slow_down", ["wait": .text(request.waitPhrase(exceeded.retryAfterSeconds))])
                var response = HTTPResponse(status: .tooManyRequests, contentType: "text/plain; charset=utf-8",
                                            body: Array(message.utf8),
                                            headers: HTTPHeaders([("Retry-After", String(exceeded.retryAfterSeconds)),
                                                                  ("Cache-Control", "no-store"),
                                                                  ("Content-Language", request.language.tag)]))
                for cookie in signedIn.clearedCookies() { response.headers.add("Set-Cookie", cookie) }
                return response
            }
        } catch {
            logger.error("Account store unavailable during sign-out", metadata: ["error": "\(error)"])
            return request.storeUnavailable(message: "signin.unavailable")
        }
    }

    // MARK: GET /auth

    /// For a proxy's `auth_request`: `200` with who is signed in (`X-Auth-Request-User`, its
    /// ASCII form `-Preferred-Username`, `-Id`: the account's stable id, the key applications
    /// use), else `401`. An address is a claim only once it was proved: `-Email` is sent only
    /// then, and `-Email-Verified` says which (an app that maps people by email must never
    /// get an address anybody could have typed). No body, no session of any kind made; a
    /// store that cannot answer is `503` (the proxy then refuses, never lets through).
    func forwardAuth(_ request: RequestContext) -> HTTPResponse {
        var response: HTTPResponse
        do {
            switch try signedIn.proxyAnswer(cookieHeader: request.cookieHeader, client: request.clientKey,
                                            unknownSessions: limiters.unknownSessions) {
            case .signedIn(let account):
                response = HTTPResponse(status: .ok, headers: Self.identityHeaders(of: account))
            case .signedOut:
                response = HTTPResponse(status: .unauthorized, headers: HTTPHeaders())
            case .limited(let exceeded):
                // Many cookies naming no session from one client: a guesser, or a broken
                // client. The proxy shows its error page; the store is not asked.
                refusals.count(exceeded)
                response = HTTPResponse(status: .tooManyRequests,
                                        headers: HTTPHeaders([("Retry-After", String(exceeded.retryAfterSeconds))]))
            }
        } catch {
            logger.error("Account store unavailable to check a signed-in session", metadata: ["error": "\(error)"])
            response = HTTPResponse(status: .serviceUnavailable, headers: HTTPHeaders([("Retry-After", "5")]))
        }
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    /// What `/auth` tells the application about `account`: only what was proved.
    static func identityHeaders(of account: Account) -> HTTPHeaders {
        let proved = account.emailVerifiedAt != nil && !account.email.isEmpty
        var headers = HTTPHeaders([
            ("X-Auth-Request-User", account.username),
            ("X-Auth-Request-Preferred-Username", percentEncodedUTF8(account.username)),
            ("X-Auth-Request-Id", String(account.id)),
            ("X-Auth-Request-Email-Verified", proved ? "true" : "false"),
        ])
        if proved { headers.add("X-Auth-Request-Email", account.email) }
        return headers
    }

    /// Every byte outside RFC 3986's unreserved set percent-encoded (UTF-8), so a header
    /// reader that only takes ASCII (or Latin-1) gets the name intact.
    static func percentEncodedUTF8(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// The live session's account for a request (the router read it), or nil: a store that
    /// could not answer counts as signed out, logged.
    private func signedInAccount(_ request: RequestContext) -> Account? {
        switch request.signedIn {
        case .account(let account):
            return account
        case .unavailable(let error):
            logger.error("Account store unavailable to check a signed-in session", metadata: ["error": "\(error)"])
            return nil
        case .signedOut, .notAsked:
            return nil
        }
    }
}

