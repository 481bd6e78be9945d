import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebAuthn
import WebKernel

/// `/account` (issue 43): the signed-in person's page. Where they are signed in ("your
/// devices": each live session's browser, network, when it began and was last used, which
/// one is this browser), signing out any other one or every other one; their passkeys (named,
/// renamed, removed, added); confirming who they are (the password again) so sensitive
/// changes are open for a while, and the ways to those changes (`AccountChangeRoutes`).
struct AccountRoutes: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `store`, `signedIn`, `hashing`, `limiters`, `refusals`,
    /// `secondFactorRule`, `providers`, `logger`, `now`.
    let services: Services
    let recent: RecentSignIn
    let announcer: AccountAnnouncer
    let streams: AccountStreams
    let retryMilliseconds: Int
    /// The applications the account lets sign it in (the OpenID provider's flow keeps them).
    let applications: ApplicationRoutes

    init(_ services: Services) {
        self.services = services
        applications = ApplicationRoutes(services)
        recent = services.signIn.recent
        announcer = AccountAnnouncer(services)
        streams = services.signIn.accountStreams
        retryMilliseconds = services.configuration.retryMilliseconds
    }

    /// How long after a sign-in (or a confirmation) sensitive changes stay open.
    var recentSignIn: TimeInterval { recent.lifetime }

    /// The form field that names a session by its handle (`SignInSessionSummary.publicID`).
    static let sessionField = "session"
    /// The form field that names a passkey (its credential id, base64url) and its new name.
    static let passkeyField = "passkey"
    static let passkeyNameField = "name"

    // MARK: GET /account

    func page(_ request: RequestContext, _ account: Account) -> HTTPResponse {
        // What the last change did, said once on the page it leads back to.
        let notice: String?
        if request.http.queryValue("confirmed") == "1" {
            notice = request.text("account.confirmed", ["minutes": .number(Int(recentSignIn / 60))])
        } else if request.http.queryValue("ended") == "one" {
            notice = request.text("account.ended")
        } else if let count = request.http.queryValue("others").flatMap({ Int($0) }), count >= 0 {
            notice = request.text(request.http.queryValue("password") == "changed" ? "account.password_changed" : "account.ended_others")
                .filled(["n": .number(count)], in: request.language)
        } else if request.http.queryValue("second_factor") == "removed" {
            notice = request.text("account.second_factor_removed")
        } else if request.http.queryValue("email") == "changed" {
            notice = request.text("account.email_changed")
        } else if request.http.queryValue("recovered") == "1" {
            // A completed recovery (issue 52): the owner looks over every way in, below.
            notice = request.text("account.recovered")
        } else if let done = request.http.queryValue("passkey"), ["renamed", "removed", "added"].contains(done) {
            notice = request.text("account.passkey_\(done)")
        } else if request.http.queryValue("application") == "revoked", let id = request.http.queryValue("client") {
            let name = applications.server.clients[id]?.declaration.name ?? id
            notice = request.text("account.apps_revoked", ["client": .name(name)])
        } else if let done = request.http.queryValue("provider"), ["linked", "unlinked"].contains(done),
                  let provider = request.http.queryValue("name").flatMap({ providers[$0] }) {
            notice = request.text("account.provider_\(done)", ["provider": .name(provider.name)])
        } else {
            notice = nil
        }
        // Sent here by a change that needs a recent sign-in: the page asks, then continues.
        let continuation = request.http.queryValue(RecentSignIn.Continuation.field).flatMap(RecentSignIn.Continuation.init(rawValue:))
        return accountPage(request, account, notice: notice, continuation: continuation, status: .ok)
    }

    // MARK: GET /account/events

    /// The page's stream: `devices` whenever the account's sessions (or this browser's
    /// "changes open until") change, on any instance; `signed_out` when this browser's
    /// session ends. JSON refusals: a program or the page's script reads them.
    func events(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        guard let idHash = signedIn.sessionHash(in: request.cookieHeader) else { throw Refused.signedOut }
        // Headers only for a look: no stream is kept for it.
        if request.method == .head { return .eventStream(EventStream()) }
        let language = request.pages.visitorLanguage(request.http, requested: request.http.queryValue("lang"))
        let stream = EventStream()
        guard streams.attach(stream, account: account, idHash: idHash, client: request.clientKey, language: language,
                             retryMilliseconds: retryMilliseconds) else {
            throw APIError(status: .serviceUnavailable, code: "too_many_streams",
                           message: "Too many account pages are open. Close one, or try again in a minute.", retryAfter: 60)
        }
        return .eventStream(stream)
    }

    // MARK: POST /account/sessions/end

    /// Signs out one other browser of the account, named by its handle.
    func endSession(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        let handle = request.form[Self.sessionField] ?? ""
        let sessions = try store.signInSessions(ofAccount: account.id, at: now(), rules: signedIn.rules)
        // Only this account's own handles: another's, a made-up or an ended one is named as such.
        guard let session = sessions.first(where: { $0.publicID == handle }),
              try store.endSignInSession(publicID: handle, ofAccount: account.id) else {
            return accountPage(request, account, error: request.text("account.no_such_session"), status: .notFound)
        }
        signedIn.forget(idHash: session.idHash)
        logger.notice("A signed-in session ended by its account's owner",
                      metadata: ["event": "session_ended", "account": "\(account.id)", "client": "\(request.client)"])
        return Pages.redirect(to: "/account?ended=one" + Self.languageParameter(request))
    }

    // MARK: POST /account/sessions/end-others

    /// Signs out every other browser of the account, keeping this one.
    func endOtherSessions(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        let ended = try store.endSignInSessions(ofAccount: account.id, keeping: signedIn.sessionHash(in: request.cookieHeader))
        // This instance forgets them at once (this browser's confirmation is read again).
        signedIn.forgetSessions(ofAccount: account.id)
        logger.notice("Every other signed-in session ended by its account's owner",
                      metadata: ["event": "sessions_ended", "account": "\(account.id)", "ended": "\(ended)", "client": "\(request.client)"])
        return Pages.redirect(to: "/account?others=\(ended)" + Self.languageParameter(request))
    }

    // MARK: POST /account/confirm

    /// The password again, so sensitive changes are open for `recentSignIn`. Paid for like a
    /// sign-in (the same per-account and per-address failure allowances, charged before the
    /// hash and given back when it was right), in the sign-in hashing lane.
    func confirm(_ request: RequestContext, _ account: Account) -> HTTPResponse {
        let password = (request.form["password"] ?? "").canonicallyComposed
        let continuation = request.form[RecentSignIn.Continuation.field].flatMap(RecentSignIn.Continuation.init(rawValue:))
        guard let idHash = signedIn.sessionHash(in: request.cookieHeader) else { return RequestContext.signInFirst(request) }
        guard account.hasPassword else {
            // A passkey-only account confirms with a fresh sign-in (its passkey).
            return accountPage(request, account, error: request.text("account.confirm_passkey"), continuation: continuation,
                               status: .conflict)
        }
        guard !password.isEmpty else {
            return accountPage(request, account, error: request.text("account.confirm_empty"), continuation: continuation,
                               status: .unprocessableContent)
        }
        let accountKey = Username.canonical(account.username), clientKey = request.clientKey
        do throws(LimitExceeded) {
            try limiters.admitPasswordGuess(clientKey: clientKey, accountKey: accountKey)
        } catch where error.storeUnavailable {
            return refusals.storeUnavailable(request, StorageFault("the shared limit on password guesses could not be read"))
        } catch {
            refusals.count(error)
            var response = accountPage(request, account, error: request.text("signin.too_many", ["wait": .text(request.waitPhrase(error.retryAfterSeconds))]), continuation: continuation,
                status: .tooManyRequests)
            response.headers.add("Retry-After", String(error.retryAfterSeconds))
            return response
        }
        let hash = account.passwordHash
        return .later { [self] respond in
            do throws(HashingRefusal) {
                try hashing.verify(password, against: hash, client: clientKey) { outcome in
                    switch outcome {
                    case .success(true):
                        limiters.forgivePasswordGuess(clientKey: clientKey, accountKey: accountKey)
                        do {
                            guard try store.recordAuthentication(idHash: idHash, at: now()) else { return respond(RequestContext.signInFirst(request)) }
                            logger.notice("Signed-in person confirmed who they are",
                                          metadata: ["event": "confirmed", "account": "\(account.id)", "client": "\(request.client)"])
                            respond(Pages.redirect(to: Self.afterConfirming(request)))
                        } catch {
                            respond(refusals.storeUnavailable(request, error))
                        }
                    case .success(false):
                        logger.notice("A confirmation on the account page failed",
                                      metadata: ["event": "confirm_failed", "account": "\(account.id)", "client": "\(request.client)"])
                        respond(accountPage(request, account, error: request.text("account.confirm_failed"),
                                            continuation: continuation, status: .unauthorized))
                    case .failure:
                        respond(refusals.storeUnavailable(request))
                    }
                }
            } catch {
                respond(refusals.storeUnavailable(request))
            }
        }
    }

    /// Where a confirmation leads: the change that asked for it, else the page saying how
    /// long changes are open.
    private static func afterConfirming(_ request: RequestContext) -> String {
        let language = languageParameter(request)
        guard let next = request.form[RecentSignIn.Continuation.field].flatMap(RecentSignIn.Continuation.init(rawValue:)),
              next != .account else { return "/account?confirmed=1" + language }
        // A fragment stays last.
        let path = next.path, parts = path.split(separator: "#", maxSplits: 1).map(String.init)
        let query = language.isEmpty ? "" : "?" + language.dropFirst()
        return parts[0] + query + (parts.count > 1 ? "#" + parts[1] : "")
    }

    // MARK: POST /account/passkeys/rename

    /// A name its owner recognises for one of the account's passkeys. Not a sensitive change
    /// (it opens nothing): no recent sign-in asked.
    func renamePasskey(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        guard let id = request.form[Self.passkeyField].flatMap(Base64URL.decode) else {
            return accountPage(request, account, error: request.text("account.no_such_passkey"), status: .notFound)
        }
        guard let name = PasskeyName.cleaned(request.form[Self.passkeyNameField] ?? "") else {
            return accountPage(request, account, error: request.text("account.passkey_name_empty"), status: .unprocessableContent)
        }
        guard try store.renamePasskey(credentialID: id, ofAccount: account.id, to: name) else {
            return accountPage(request, account, error: request.text("account.no_such_passkey"), status: .notFound)
        }
        logger.notice("A passkey renamed by its account's owner", metadata: ["event": "passkey_renamed", "account": "\(account.id)", "client": "\(request.client)"])
        return Pages.redirect(to: "/account?passkey=renamed" + Self.languageParameter(request) + "#passkeys")
    }

    // MARK: POST /account/passkeys/remove (a recent sign-in)

    /// Removes one of the account's passkeys, never its last way in; the owner is told.
    func removePasskey(_ request: RequestContext, _ account: Account) throws -> HTTPResponse {
        let passkeys = try store.passkeys(ofAccount: account.id)
        guard let id = request.form[Self.passkeyField].flatMap(Base64URL.decode),
              let passkey = passkeys.first(where: { $0.credentialID == id }) else {
            return accountPage(request, account, error: request.text("account.no_such_passkey"), status: .notFound)
        }
        let time = now()
        let name = Self.displayName(of: passkey, among: passkeys, request)
        let events = try announcer.events(.passkeyRemoved, webhook: "account.passkey_removed", for: account, detail: .name(name),
                                          language: request.language, at: time)
        let removal = try store.removePasskey(credentialID: id, ofAccount: account.id, events: events)
        switch removal {
        case .removed:
            announcer.nudge()
            logger.notice("A passkey removed by its account's owner",
                          metadata: ["event": "passkey_removed", "account": "\(account.id)", "client": "\(request.client)"])
            return Pages.redirect(to: "/account?passkey=removed" + Self.languageParameter(request) + "#passkeys")
        case .lastWayIn:
            return accountPage(request, account, error: request.text("account.passkey_last_way_in"), status: .conflict)
        case .notFound:
            return accountPage(request, account, error: request.text("account.no_such_passkey"), status: .notFound)
        }
    }

    /// What the page calls a passkey: its name, else "Passkey 2" by the order they were made.
    static func displayName(of passkey: Passkey, among passkeys: [Passkey], _ request: RequestContext) -> String {
        if !passkey.name.isEmpty { return passkey.name }
        let number = (passkeys.firstIndex { $0.credentialID == passkey.credentialID } ?? 0) + 1
        return request.text("account.passkey_unnamed", ["n": .text(String(number))])
    }

    // MARK: Pages

    static func languageParameter(_ request: RequestContext) -> String {
        request.language.tag == Languages.fallback ? "" : "&lang=\(request.language.tag)"
    }

    /// The page with a refusal said on it (a change that could not be made).
    func page(_ request: RequestContext, _ account: Account, error: String?, status: HTTPStatus) -> HTTPResponse {
        accountPage(request, account, error: error, status: status)
    }

    private func accountPage(_ request: RequestContext, _ account: Account, notice: String? = nil, error: String? = nil,
                             continuation: RecentSignIn.Continuation? = nil, status: HTTPStatus) -> HTTPResponse {
        let sessions: [SignInSessionSummary], passkeys: [Passkey], hasSecondFactor: Bool, links: [ProviderLink]
        let applications: [AccountPage.ApplicationEntry]
        do {
            applications = try self.applications.entries(of: account)
            sessions = try store.signInSessions(ofAccount: account.id, at: now(), rules: signedIn.rules)
            passkeys = try store.passkeys(ofAccount: account.id)
            links = try store.providerLinks(ofAccount: account.id)
            hasSecondFactor = try store.secondFactor(ofAccount: account.id)?.isEnabled == true
        } catch {
            return refusals.storeUnavailable(request, error)
        }
        let current = signedIn.sessionHash(in: request.cookieHeader)
        // Open for sensitive changes until then (nil: closed; the page asks to confirm first).
        let openUntil = sessions.first { $0.idHash == current }
            .map { $0.authenticatedAt.addingTimeInterval(recentSignIn) }
            .flatMap { $0 > now() ? $0 : nil }
        var page = AccountPage(
            username: account.username,
            openUntil: openUntil,
            confirmsWithPassword: account.hasPassword,
            hasPassword: account.hasPassword,
            email: account.email,
            offersEmailChange: announcer.mails != nil,
            offersSecondFactor: secondFactorRule != .off || hasSecondFactor,
            continuation: openUntil == nil ? continuation : nil,
            devices: sessions.map { session in
                .init(handle: session.publicID, device: session.device, network: session.network, began: session.createdAt,
                      lastUsed: session.lastSeenAt, isThisBrowser: session.idHash == current)
            },
            passkeys: passkeys.map { passkey in
                .init(handle: Base64URL.encode(passkey.credentialID), name: Self.displayName(of: passkey, among: passkeys, request),
                      created: passkey.createdAt, lastUsed: passkey.lastUsedAt, isSynced: passkey.isBackedUp,
                      isLastWayIn: passkeys.count == 1 && !account.hasPassword && links.isEmpty)
            },
            notice: notice, error: error)
        page.linkedProviders = links.map { link in
            .init(id: link.provider, name: providers[link.provider]?.name ?? link.provider, email: link.email, issuer: link.issuer,
                  subject: link.subject, linked: link.linkedAt,
                  isLastWayIn: links.count == 1 && passkeys.isEmpty && !account.hasPassword)
        }
        page.linkableProviders = providers.values.filter { provider in !links.contains { $0.provider == provider.id } }
            .sorted { $0.id < $1.id }.map { ($0.id, $0.name) }
        page.applications = applications
        page.offersApplications = !self.applications.server.clients.isEmpty
        return request.page(page, status: status)
    }
}
