import Dispatch
import Foundation
import Identity
import Logging
import MicroHTTPD
import OpenIDConnect
import SignupDomain
import WebKernel


/// Signing up and signing in through an OpenID Connect provider (issue 45).
///
/// - `POST /signin/provider` starts: a `state`, a `nonce` and a PKCE verifier sealed in a
///   cookie of this browser (`ProviderCookies.Flow`), then the provider's login page.
/// - `GET /signin/provider/callback` is where the provider sends the person back: the state
///   must be this browser's, the code is exchanged with the verifier, and the ID token's
///   signature and claims are checked (`OpenIDProvider`). Then:
///   - an identity linked to an account signs in to it, as a password would (the second
///     factor, `return_to`, `/auth`);
///   - an identity whose proved address an account here has is linked only after the
///     person signs in to that account (no provider can take an account by asserting its
///     address);
///   - anyone else gets the sign-up form, the password step replaced by "Signed in with
///     <provider>", every other field (username, the operator's, terms) still live.
/// - From `/account` (a recent sign-in), `POST /account/providers/link` links another and
///   `POST /account/providers/unlink` unlinks one, never the last way in; an account
///   without a password confirms who it is with its provider (`POST /account/providers/confirm`).
///
/// Calls to the provider block their thread for at most its bounds, so they run on a
/// Dispatch queue (`.later`), never on libmicrohttpd's threads.
struct ProviderRoutes: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `providers`, `store`, `signedIn`, `sessions`,
    /// `availability`, `returnTo`, `metrics`, `logger`, `now`.
    let services: Services
    let cookies: ProviderCookies
    /// Links made, and the identity that waits for a sign-in to be linked.
    let links: ProviderLinker
    let funnel: SignInFunnel
    let announcer: AccountAnnouncer
    /// Addresses must be proved by mail here (`--email-verification required`).
    let provesAddresses: Bool
    let redirectURI: @Sendable () -> URL
    /// Where calls to providers wait (one for the process: SignInRoutes and SecondFactorRoutes
    /// hold their own ProviderRoutes for a waiting link, and share it).
    var queue: DispatchQueue { Self.queue }
    static let queue = DispatchQueue(label: "livesignup.providers", attributes: .concurrent)

    init(_ services: Services) {
        self.services = services
        cookies = services.providerSignIn.cookies
        links = ProviderLinker(services)
        funnel = SignInFunnel(services)
        announcer = AccountAnnouncer(services)
        provesAddresses = services.outbox.proofs != nil
        redirectURI = services.providerSignIn.redirectURI
    }

    static let callbackPath = "/signin/provider/callback"

    // MARK: Starting

    /// `POST /signin/provider`: sign in (or up) through the provider the form names.
    func start(_ request: RequestContext) -> HTTPResponse {
        begin(request, intent: .signin, account: nil, returnTo: request.returnTarget)
    }

    /// `POST /account/providers/link` (a recent sign-in): link another provider.
    func link(_ request: RequestContext) -> HTTPResponse {
        guard case .account(let account) = request.signedIn else { return expired(request, provider: nil) }
        return begin(request, intent: .link, account: account.id, returnTo: nil)
    }

    /// `POST /account/providers/confirm` (signed in): an account without a password proves
    /// who it is with one of its providers, then continues where the confirmation leads.
    func confirm(_ request: RequestContext) -> HTTPResponse {
        guard case .account(let account) = request.signedIn else { return expired(request, provider: nil) }
        let continuation = request.form[RecentSignIn.Continuation.field].flatMap(RecentSignIn.Continuation.init(rawValue:)) ?? .account
        return begin(request, intent: .confirm, account: account.id, returnTo: continuation.rawValue)
    }

    func begin(_ request: RequestContext, intent: ProviderCookies.Flow.Intent, account: Int64?,
                       returnTo: String?) -> HTTPResponse {
        guard let provider = request.form["provider"].flatMap({ providers[$0] }) else {
            metrics.provider("unknown", "unknown")
            return problem(request, nil, "provider.error.unknown", code: "unknown_provider", status: .notFound, cookies: [])
        }
        let flow = ProviderCookies.Flow(provider: provider.id, state: PKCE.randomToken(), nonce: PKCE.randomToken(),
                                        verifier: PKCE.makeVerifier(), intent: intent, account: account, returnTo: returnTo,
                                        language: request.language.tag, issuedAt: now())
        let redirect = redirectURI()
        return .later { [self] respond in
            queue.async {
                do throws(OpenIDError) {
                    // A confirmation asks the provider to have the person log in again.
                    let url = try provider.client.authorizationURL(redirectURI: redirect, state: flow.state, nonce: flow.nonce,
                                                                   codeVerifier: flow.verifier, uiLocales: request.language.tag,
                                                                   prompt: intent == .confirm ? "login" : nil)
                    metrics.provider(provider.id, "started")
                    respond(Pages.redirect(to: url.absoluteString, cookies: [cookies.flowCookie(flow)]))
                } catch {
                    respond(failed(request, provider, error, intent: intent))
                }
            }
        }
    }

    // MARK: The provider's answer

    /// `GET /signin/provider/callback`.
    func callback(_ request: RequestContext) -> HTTPResponse {
        let http = request.http
        // One use: whatever happens next, this browser's flow is over.
        let clearFlow = cookies.flowCookie(nil)
        guard let flow = cookies.flow(in: http), let provider = providers[flow.provider] else {
            metrics.provider("unknown", "expired")
            return expired(request, provider: nil, cookies: [clearFlow])
        }
        guard let state = http.queryValue("state"), OpenIDProvider.constantTimeEqual(state, flow.state) else {
            metrics.provider(provider.id, "state")
            logger.notice("A provider's answer refused: not this browser's state",
                          metadata: ["event": "provider_refused", "provider": "\(provider.id)", "reason": "state",
                                     "client": "\(request.client)"])
            return problem(request, provider, "provider.error.state", code: "wrong_state", status: .badRequest, cookies: [clearFlow])
        }
        // RFC 9207: a provider that names itself must be the one this flow went to (mix-up).
        if let issuer = http.queryValue("iss"), issuer != provider.declaration.issuer {
            return failed(request, provider, .wrongIssuer(issuer), intent: flow.intent, cookies: [clearFlow])
        }
        if let error = http.queryValue("error") {
            let cancelled = error == "access_denied"
            metrics.provider(provider.id, cancelled ? "cancelled" : "refused")
            let message = cancelled ? request.text("provider.error.cancelled")
                : request.text("provider.error.refused", ["error": .name(String(error.prefix(60)))])
            return problem(request, provider, message: message, code: cancelled ? "cancelled" : "provider_error",
                           status: cancelled ? .forbidden : .badGateway, cookies: [clearFlow])
        }
        guard let code = http.queryValue("code"), !code.isEmpty, code.utf8.count <= 2048 else {
            metrics.provider(provider.id, "state")
            return problem(request, provider, "provider.error.state", code: "no_code", status: .badRequest, cookies: [clearFlow])
        }
        let redirect = redirectURI()
        return .later { [self] respond in
            queue.async {
                // The flow's state is spent once, across instances, before the provider is
                // asked: a replayed callback (the cookie and the answer copied) costs no call to
                // its token endpoint (issue 52).
                do {
                    guard try store.spendProof("oidc-state:" + SignInSessionID.hash(flow.state),
                                               until: flow.issuedAt.addingTimeInterval(ProviderCookies.flowLifetime)) else {
                        metrics.provider(provider.id, "expired")
                        logger.notice("A provider's answer refused: its flow was used already",
                                      metadata: ["event": "provider_refused", "provider": "\(provider.id)", "reason": "replayed",
                                                 "client": "\(request.client)"])
                        return respond(expired(request, provider: provider, cookies: [clearFlow]))
                    }
                } catch {
                    logger.error("Account store unavailable to spend a provider flow", metadata: ["error": "\(error)"])
                    return respond(request.storeUnavailable())
                }
                let claims: IDTokenClaims
                do throws(OpenIDError) {
                    // RFC 9207: an answer without `iss` from a provider that always names itself
                    // is not its answer (discovery says so; read here, off the request threads).
                    try provider.client.checkAnswerIssuer(http.queryValue("iss"))
                    let token = try provider.client.exchange(code: code, codeVerifier: flow.verifier, redirectURI: redirect)
                    claims = try provider.client.verifyIDToken(token, nonce: flow.nonce)
                } catch {
                    return respond(failed(request, provider, error, intent: flow.intent, cookies: [clearFlow]))
                }
                respond(answered(request, provider, flow, claims, clearFlow: clearFlow))
            }
        }
    }

    /// The verified answer, by what the flow was for.
    func answered(_ request: RequestContext, _ provider: ConfiguredProvider, _ flow: ProviderCookies.Flow,
                          _ claims: IDTokenClaims, clearFlow: String) -> HTTPResponse {
        let email = claims.email?.trimmingCharacters(in: .whitespaces) ?? ""
        let link = NewProviderLink(provider: provider.id, issuer: claims.iss.value, subject: claims.sub.value,
                                   email: String(email.prefix(320)))
        do {
            switch flow.intent {
            case .link:
                return try linkToSignedIn(request, provider, flow, link, clearFlow: clearFlow)
            case .confirm:
                return try confirmSignedIn(request, provider, flow, link, clearFlow: clearFlow)
            case .signin:
                break
            }
            if let account = try store.account(linkedTo: link.issuer, subject: link.subject) {
                return try signIn(request, provider, account, returnTo: flow.returnTo, cookies: [clearFlow])
            }
            // Nobody is linked. An address is needed, and one the provider says it proved:
            // an account here is never made with a provider's unproved address.
            guard EmailAddress.isValid(email), claims.emailVerified else {
                metrics.provider(provider.id, "unverified_email")
                logger.notice("A provider's sign-up refused: no proved address",
                              metadata: ["event": "provider_refused", "provider": "\(provider.id)", "reason": "unverified_email",
                                         "client": "\(request.client)"])
                return problem(request, provider, "provider.error.unverified_email", code: "unverified_email", status: .forbidden,
                               cookies: [clearFlow])
            }
            let proved = provider.declaration.trustsEmailVerified
            if let owner = try store.account(withProvedEmail: email) {
                // Someone here proved this address: they link by signing in, never by the
                // provider's word alone.
                metrics.provider(provider.id, "link_offered")
                let identity = ProviderCookies.Identity(purpose: .link, provider: provider.id, issuer: link.issuer,
                                                        subject: link.subject, email: link.email, providerSaysVerified: claims.emailVerified, issuedAt: now())
                logger.notice("A provider's identity waits for a sign-in to link it",
                              metadata: ["event": "provider_link_offered", "provider": "\(provider.id)", "account": "\(owner.id)",
                                         "client": "\(request.client)"])
                let query = PageRenderer.query(languageQuery: "?link=\(provider.id)" + Self.languageParameter(request),
                                               returnTo: flow.returnTo)
                return Pages.redirect(to: "/signin" + query, cookies: [clearFlow, cookies.identityCookie(identity)])
            }
            guard proved || !provesAddresses else {
                metrics.provider(provider.id, "needs_proof")
                return problem(request, provider, "provider.error.needs_proof", code: "needs_proof", status: .forbidden,
                               cookies: [clearFlow])
            }
            let identity = ProviderCookies.Identity(purpose: .signup, provider: provider.id, issuer: link.issuer,
                                                    subject: link.subject, email: link.email, providerSaysVerified: claims.emailVerified, issuedAt: now())
            return signupForm(request, provider, identity, suggested: claims.preferred_username ?? "",
                              returnTo: flow.returnTo, cookies: [clearFlow, cookies.identityCookie(identity)])
        } catch ProviderLinkError.linkedElsewhere {
            metrics.provider(provider.id, "linked_elsewhere")
            return problem(request, provider, "provider.error.linked_elsewhere", code: "linked_elsewhere", status: .conflict,
                           cookies: [clearFlow])
        } catch {
            logger.error("Account store unavailable after a provider's answer", metadata: ["error": "\(error)"])
            metrics.provider(provider.id, "unavailable")
            return request.storeUnavailable(headers: HTTPHeaders([("Set-Cookie", clearFlow)]))
        }
    }

    /// A linked identity signs in as a password would: a disabled account is refused, a
    /// second factor asked, then the session.
    func signIn(_ request: RequestContext, _ provider: ConfiguredProvider, _ account: Account, returnTo: String?,
                        cookies extra: [String]) throws -> HTTPResponse {
        guard account.disabledAt == nil else {
            metrics.provider(provider.id, "disabled")
            logger.notice("Sign-in refused: the account is disabled",
                          metadata: ["event": "signin_disabled", "method": "provider", "provider": "\(provider.id)",
                                     "account": "\(account.id)", "client": "\(request.client)"])
            return problem(request, provider, message: request.text("signin.disabled"), code: "disabled", status: .forbidden,
                           cookies: extra)
        }
        let session: [String]
        switch try funnel.finish(account, proved: .provider, request, returnTo: .some(returnTo)) {
        case .signedIn(let cookies):
            session = cookies
        case .secondStep(var step):
            for cookie in extra { step.headers.add("Set-Cookie", cookie) }
            metrics.provider(provider.id, "second_factor")
            // The first factor, said here: the second step's own line cannot tell a provider from a password.
            logger.notice("A provider's sign-in goes on to the second factor",
                          metadata: ["event": "provider_first_factor", "provider": "\(provider.id)", "account": "\(account.id)",
                                     "client": "\(request.client)"])
            return step
        }
        metrics.provider(provider.id, "signed_in")
        metrics.signin(.success)
        logger.notice("Signed in", metadata: ["event": "signin", "method": "provider", "provider": "\(provider.id)",
                                              "account": "\(account.id)", "client": "\(request.client)"])
        return Pages.redirect(to: returnTo ?? "/welcome" + PageRenderer.languageQuery(request.language), cookies: session + extra)
    }

    func linkToSignedIn(_ request: RequestContext, _ provider: ConfiguredProvider, _ flow: ProviderCookies.Flow,
                                _ link: NewProviderLink, clearFlow: String) throws -> HTTPResponse {
        // Still the same person, signed in, in this browser.
        guard let account = try signedIn.account(cookieHeader: request.cookieHeader), account.id == flow.account else {
            metrics.provider(provider.id, "expired")
            return expired(request, provider: provider, cookies: [clearFlow])
        }
        try links.link(link, provider, to: account, request)
        return Pages.redirect(to: "/account?provider=linked&name=\(provider.id)" + Self.languageParameter(request) + "#providers",
                              cookies: [clearFlow])
    }

    /// Links and announces (the owner's notice, `account.provider_linked`), in one transaction.
    func confirmSignedIn(_ request: RequestContext, _ provider: ConfiguredProvider, _ flow: ProviderCookies.Flow,
                                 _ link: NewProviderLink, clearFlow: String) throws -> HTTPResponse {
        guard let account = try signedIn.account(cookieHeader: request.cookieHeader), account.id == flow.account,
              let hash = signedIn.sessionHash(in: request.cookieHeader) else {
            metrics.provider(provider.id, "expired")
            return expired(request, provider: provider, cookies: [clearFlow])
        }
        // Only an identity of this very account confirms it.
        guard try store.account(linkedTo: link.issuer, subject: link.subject)?.id == account.id else {
            metrics.provider(provider.id, "linked_elsewhere")
            return problem(request, provider, "provider.error.linked_elsewhere", code: "not_this_account", status: .forbidden,
                           cookies: [clearFlow])
        }
        _ = try store.recordAuthentication(idHash: hash, at: now())
        metrics.provider(provider.id, "confirmed")
        logger.notice("Signed-in person confirmed who they are", metadata: ["event": "confirmed", "method": "provider",
                                                                           "account": "\(account.id)", "client": "\(request.client)"])
        let continuation = flow.returnTo.flatMap(RecentSignIn.Continuation.init(rawValue:)) ?? .account
        let separator = continuation.path.contains("?") ? "&" : "?"
        let target = continuation == .account ? "/account?confirmed=1" + Self.languageParameter(request)
            : continuation.path + (request.language.tag == Languages.fallback ? "" : separator + "lang=\(request.language.tag)")
        return Pages.redirect(to: target, cookies: [clearFlow])
    }

    // MARK: A new person's form

    /// The sign-up form with what the provider said: the address, and its `preferred_username`
    /// as a suggestion checked live like anything typed. Its session's credential is the
    /// provider's sign-in (`provider.signed_in`, met).
    func signupForm(_ request: RequestContext, _ provider: ConfiguredProvider, _ identity: ProviderCookies.Identity,
                            suggested: String, returnTo: String?, cookies extra: [String]) -> HTTPResponse {
        let policy = request.policy
        let username = Self.suggestedUsername(suggested, email: identity.email, policy: policy)
        let values: [SignupField: String] = [.username: username, .email: identity.email]
        let token = sessions.mintToken()
        do {
            let session = try sessions.session(for: token, address: request.client, language: request.language.tag)
            session.startThroughProvider(values: values)
        } catch {
            // No session (the form's limits): the page still works without one, posting plainly.
            logger.debug("No live session for a provider's sign-up form", metadata: ["error": "\(error)"])
        }
        let availability = (try? self.availability.availabilityNow(of: username)) ?? .pending
        let evaluation = policy.evaluateSubmission(values: values, usernameAvailability: availability,
                                                   credential: CredentialChoice(method: .provider, passkeyCreated: true))
        let usernameProblem = evaluation.problems.first { $0.field == .username }
        var page = SignupPage(
            token: token, values: values, requirementStates: evaluation.requirementStates,
            messages: usernameProblem.map { [$0.field: $0.message] } ?? [:], strength: .none,
            returnTo: returnTo ?? "")
        page.credential = .provider
        page.provider = provider.name
        metrics.provider(provider.id, "signup_form")
        var headers = HTTPHeaders()
        for cookie in extra { headers.add("Set-Cookie", cookie) }
        return request.page(page, status: .ok, headers: headers)
    }

    /// `preferred_username` when it is one a person could type here, else the address's
    /// local part, else nothing: the live checks say whether it is free and allowed.
    static func suggestedUsername(_ preferred: String, email: String, policy: FormPolicy) -> String {
        let candidates = [preferred, String(email.prefix { $0 != "@" })]
        let length = policy.settings.usernameLength
        return candidates.first { candidate in
            !candidate.isEmpty && length.contains(candidate.count) && policy.settings.usernameCharacters.allows(candidate)
        } ?? ""
    }

    // MARK: Pages

    func failed(_ request: RequestContext, _ provider: ConfiguredProvider, _ error: OpenIDError,
                        intent: ProviderCookies.Flow.Intent, cookies extra: [String] = []) -> HTTPResponse {
        metrics.provider(provider.id, error.reason)
        logger.notice("A provider's sign-in failed", metadata: ["event": "provider_refused", "provider": "\(provider.id)",
                                                                "reason": "\(error.reason)", "detail": "\(error)",
                                                                "client": "\(request.client)"])
        switch error {
        case .unreachable, .discovery:
            // The provider is down or broken: the password form is the way in meanwhile.
            return problem(request, provider, "provider.error.unreachable", code: "provider_unreachable", status: .badGateway,
                           cookies: extra)
        case .codeRefused(let code):
            let message = request.text("provider.error.refused", ["error": .name(code)])
            return problem(request, provider, message: message, code: "code_refused", status: .badRequest, cookies: extra)
        default:
            let message = request.text("provider.error.untrusted", ["reason": .text(error.reason)])
            return problem(request, provider, message: message, code: error.reason, status: .badRequest, cookies: extra)
        }
    }

    func expired(_ request: RequestContext, provider: ConfiguredProvider?, cookies extra: [String] = []) -> HTTPResponse {
        problem(request, provider, "provider.error.expired", code: "expired", status: .badRequest, cookies: extra)
    }

    func problem(_ request: RequestContext, _ provider: ConfiguredProvider?, _ key: String, code: String,
                         status: HTTPStatus, cookies extra: [String]) -> HTTPResponse {
        problem(request, provider, message: request.text(key), code: code, status: status, cookies: extra)
    }

    /// A readable page: what happened, that nothing changed, and the way back to signing in.
    func problem(_ request: RequestContext, _ provider: ConfiguredProvider?, message: String, code: String,
                         status: HTTPStatus, cookies extra: [String]) -> HTTPResponse {
        let name = provider?.name ?? request.text("provider.generic_name")
        var headers = HTTPHeaders()
        for cookie in extra { headers.add("Set-Cookie", cookie) }
        return request.pages.problem(title: request.text("provider.error_title", ["provider": .name(name)]),
                                     message: request.language.filled(message, ["provider": .name(name)]),
                                     code: code, linkURL: "/signin" + PageRenderer.languageQuery(request.language),
                                     linkText: request.text("provider.back"), status: status, headers: headers)
    }

    static func languageParameter(_ request: RequestContext) -> String {
        request.language.tag == Languages.fallback ? "" : "&lang=\(request.language.tag)"
    }
}
