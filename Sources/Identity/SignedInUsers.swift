import Foundation
import MicroHTTPD
import SignupDomain
import WebKernel
import Locking

/// Who is signed in, by the random id in their sign-in cookie. The sessions live in the
/// account store (only each id's SHA-256), so every instance behind a proxy knows them and a
/// restart signs nobody out. Every sign-in and sign-up gets a fresh id (no fixation), and
/// ends the session the browser held before (ASVS V7.2.4).
///
/// The cookie is `__Host-livesignup_auth` when it is `Secure` and has no `Domain`: browsers
/// then refuse it from any other host, so a sibling subdomain cannot plant one. Otherwise (no
/// TLS, or `--cookie-domain` for a sibling application) it is `livesignup_auth`. The old name
/// is still read for one session lifetime after a start with the new one, so nobody is
/// signed out by the upgrade. A request carrying two session cookies is signed out: one of
/// them was planted.
package final class SignedInUsers: Sendable {
    package static let plainCookieName = "livesignup_auth"
    package static let hostCookieName = "__Host-livesignup_auth"
    /// The name this server sets.
    package let cookieName: String
    /// How long a session lasts however much it is used.
    package let lifetime: TimeInterval
    package let rules: SignInSessionRules
    /// Adds `Secure`, so the cookie is only sent over HTTPS (behind a TLS proxy).
    package let secureCookies: Bool
    /// `Domain=` for the cookie, so the application on a sibling host (app.example.com beside
    /// signup.example.com) receives it and its proxy can ask `/auth`; nil keeps it host-only.
    package let cookieDomain: String?
    /// Until when `livesignup_auth` is still read while `__Host-livesignup_auth` is set.
    private let plainNameReadUntil: Date?
    private let store: any AccountStore
    private let now: @Sendable () -> Date
    /// What the store said lately of a session id (its account, or nil: no live session), so
    /// `/auth` on every request of a page (its scripts, images, API calls) costs a dictionary
    /// look-up, not a database read each, for a live session and an ended one alike.
    private let remembered = Locked<[String: (account: Account?, until: Date)]>([:])
    /// How long a confirmation is trusted: a session ended on another instance (sign-out,
    /// revoke) is refused here at most this much later; on this instance at once.
    package static let confirmationLifetime: TimeInterval = 5
    package static let confirmationCapacity = 10_000

    /// Sessions one account keeps at once (`--signin-sessions-per-account`).
    package let sessionsPerAccount: Int

    package init(store: any AccountStore, lifetime: TimeInterval, idleTimeout: TimeInterval, secureCookies: Bool = false,
         cookieDomain: String? = nil, sessionsPerAccount: Int = SignupLimits().signInSessionsPerAccount,
         now: @escaping @Sendable () -> Date) {
        self.sessionsPerAccount = sessionsPerAccount
        self.cookieDomain = cookieDomain
        self.store = store
        self.lifetime = lifetime
        rules = SignInSessionRules(idleTimeout: idleTimeout)
        self.secureCookies = secureCookies
        self.now = now
        let hostOnly = secureCookies && cookieDomain == nil
        cookieName = hostOnly ? Self.hostCookieName : Self.plainCookieName
        plainNameReadUntil = hostOnly ? now().addingTimeInterval(lifetime) : nil
    }

    /// Where a sign-in comes from, as the owner's list of devices shows it.
    package struct Origin: Sendable {
        /// `DeviceLabel`'s "Firefox · Linux".
        package var device: String
        /// The client's network (`ClientKey.network`), never its whole address.
        package var network: String

        package init(device: String, network: String) {
            self.device = device
            self.network = network
        }
    }

    /// Starts a session for `account`, ending the one `cookieHeader` held (if any); returns
    /// the `Set-Cookie` values that carry it (and clear the old name when it changed).
    /// `verified`: the person proved who they are (a password, a code, a passkey with user
    /// verification), so sensitive changes are open at once; a passkey that only showed it
    /// was there opens nothing until the account page's confirmation.
    /// Only `SignInFunnel` calls it: the one place that decides the second step first.
    package func signIn(_ account: Account, replacing cookieHeader: String?, from origin: Origin, verified: Bool = true,
                        methods: [String] = []) throws -> [String] {
        // The one session the cookie names, never more: two cookies were planted, and a header
        // of forty random ids must not cost forty writes (issue 52).
        if let previous = sessionID(in: cookieHeader) {
            let hash = SignInSessionID.hash(previous)
            forget(hash)
            try store.endSignInSession(idHash: hash)
        }
        let id = SignInSessionID.make()
        let started = now()
        let ended = try store.startSignInSession(NewSignInSession(
            idHash: SignInSessionID.hash(id), accountID: account.id,
            createdAt: started, expiresAt: started.addingTimeInterval(lifetime),
            device: origin.device, network: origin.network,
            authenticatedAt: verified ? started : Date(timeIntervalSince1970: 0), methods: methods), keepingAtMost: sessionsPerAccount)
        for hash in ended { forget(hash) }
        return cookies(id)
    }

    /// The account a request's cookie is signed in as, if its session is live.
    package func account(cookieHeader: String?) throws -> Account? {
        guard let id = sessionID(in: cookieHeader) else { return nil }
        let hash = SignInSessionID.hash(id), time = now()
        if let known = recall(hash, at: time) { return known }
        return try read(hash, at: time)
    }

    /// What `/auth` learns from a cookie.
    package enum ProxyAnswer {
        case signedIn(Account)
        case signedOut
        /// Too many cookies from this client named no live session lately.
        case limited(LimitExceeded)
    }

    /// For `/auth`, which a proxy calls on every request: a cookie is answered from memory
    /// when this instance confirmed or refused it lately; otherwise the store is read, and
    /// the read is paid for from `client`'s allowance for unknown sessions first, given back
    /// when the session is live (so a known session never counts).
    package func proxyAnswer(cookieHeader: String?, client: String, unknownSessions: RateLimiter) throws -> ProxyAnswer {
        guard let id = sessionID(in: cookieHeader) else { return .signedOut }
        let hash = SignInSessionID.hash(id), time = now()
        if let known = recall(hash, at: time) { return known.map(ProxyAnswer.signedIn) ?? .signedOut }
        do throws(LimitExceeded) {
            try unknownSessions.admit(client)
        } catch {
            return .limited(error)
        }
        guard let account = try read(hash, at: time) else { return .signedOut }
        unknownSessions.refund(client)
        return .signedIn(account)
    }

    /// What the store said of `hash` within `confirmationLifetime`: `.some(nil)` for no live
    /// session, nil when it has not been asked lately.
    private func recall(_ hash: String, at time: Date) -> Account?? {
        remembered.withLock { memory in memory[hash].flatMap { $0.until > time ? .some($0.account) : nil } }
    }

    /// Asks the store, and remembers the answer (a bounded memory: when full, the expired
    /// go; if none had, all go).
    private func read(_ hash: String, at time: Date) throws -> Account? {
        let account = try store.signedInAccount(idHash: hash, at: time, rules: rules)
        remembered.withLock { memory in
            if memory.count >= Self.confirmationCapacity {
                memory = memory.filter { $0.value.until > time }
                if memory.count >= Self.confirmationCapacity { memory.removeAll(keepingCapacity: true) }
            }
            memory[hash] = (account, time.addingTimeInterval(Self.confirmationLifetime))
        }
        return account
    }

    /// The stored hash of the session a `Cookie` header carries (one of ours, exactly one).
    package func sessionHash(in cookieHeader: String?) -> String? {
        sessionID(in: cookieHeader).map(SignInSessionID.hash)
    }

    /// The live session the request's cookie names, as the account's list has it: its handle,
    /// when and how it was proved (an application's `sid`, `auth_time` and `amr`).
    package func session(of account: Account, cookieHeader: String?) throws -> SignInSessionSummary? {
        guard let hash = sessionHash(in: cookieHeader) else { return nil }
        return try store.signInSessions(ofAccount: account.id, at: now(), rules: rules).first { $0.idHash == hash }
    }

    /// Forgets what this instance remembered of one session (ended in the store), so it is
    /// refused here at once.
    package func forget(idHash: String) {
        forget(idHash)
    }

    /// Forgets every remembered confirmation for the account (its sessions were ended in the
    /// store), so this instance refuses them at once rather than after `confirmationLifetime`.
    package func forgetSessions(ofAccount id: Int64) {
        remembered.withLock { memory in memory = memory.filter { $0.value.account?.id != id } }
    }

    private func forget(_ hash: String) {
        _ = remembered.withLock { $0.removeValue(forKey: hash) }
    }

    /// Ends the request's session, if it has one; returns the `Set-Cookie` values that clear
    /// the cookie either way (under both names).
    /// The `Set-Cookie` values that clear this browser's cookie (under both names), ending nothing.
    package func clearedCookies() -> [String] {
        cookies("", cleared: true)
    }

    /// What a sign-out did: the cookies to clear them, or the client's allowance for cookies
    /// naming no live session spent (nothing read or written).
    package enum SignOut {
        case cleared([String])
        case limited(LimitExceeded)
    }

    package func signOut(cookieHeader: String?, client: String, unknownSessions: RateLimiter) throws -> SignOut {
        // Exactly one of ours: that session ends if it is live. None, or two (one was planted):
        // the cookies are cleared and nothing is read or written, so a header full of random
        // ids costs no store work (it cost one write each, issue 52). One that names no live
        // session costs one indexed read, never a write, and is counted per address as /auth
        // counts them: past the allowance the answer says so. A live session is looked at
        // before any allowance, so a person can always sign out, whatever a neighbour behind
        // the same address sends.
        if let id = sessionID(in: cookieHeader) {
            let hash = SignInSessionID.hash(id), time = now()
            let live = try recall(hash, at: time).map { $0 != nil } ?? (try read(hash, at: time) != nil)
            if live {
                forget(hash)
                try store.endSignInSession(idHash: hash)
            } else {
                do throws(LimitExceeded) {
                    try unknownSessions.admit(client)
                } catch {
                    return .limited(error)
                }
            }
        }
        return .cleared(cookies("", cleared: true))
    }

    /// Deletes the sessions that have ended (the periodic sweep).
    package func removeEnded() throws -> Int {
        try store.removeEndedSignInSessions(at: now(), rules: rules)
    }

    /// The session cookie (or, `cleared`, its removal), and the old name's removal when the
    /// cookie now has the `__Host-` name.
    private func cookies(_ value: String, cleared: Bool = false) -> [String] {
        let cookie = SetCookie(cookieName, value, path: "/", maxAge: Int(lifetime), sameSite: .lax, domain: cookieDomain,
                               secure: secureCookies)
        var cookies = [cleared ? cookie.cleared.header : cookie.header]
        if cookieName != Self.plainCookieName {
            cookies.append(SetCookie(Self.plainCookieName, "", path: "/", maxAge: 0, sameSite: .lax, secure: false).header)
        }
        return cookies
    }

    /// The session id a `Cookie` header carries, if it carries exactly one of ours: two
    /// session cookies (under one name or both) mean one was planted, and neither is believed.
    package func sessionID(in cookieHeader: String?) -> String? {
        Self.sessionID(in: cookieHeader, names: cookieNamesRead)
    }

    /// The names a session cookie is read under now: ours, and for one lifetime after
    /// `__Host-` was turned on, the plain name too.
    private var cookieNamesRead: [String] {
        let readsPlainName = cookieName != Self.plainCookieName && plainNameReadUntil.map { now() < $0 } == true
        return readsPlainName ? [cookieName, Self.plainCookieName] : [cookieName]
    }

    /// The one well-formed session id under `names` in the header, or nil when there is none
    /// or more than one. A function of its arguments alone, so the fuzzer reads headers with it.
    package static func sessionID(in cookieHeader: String?, names: [String]) -> String? {
        // 43 URL-safe base64 characters (256 bits); anything else is not ours.
        let ids = names.flatMap { HTTPRequest.cookieValues(named: $0, in: cookieHeader) }.filter(\.isRandomToken)
        return ids.count == 1 ? ids[0] : nil
    }
}

extension String {
    /// 43 URL-safe base64 characters, as the server's random ids are written (256 bits:
    /// sign-in session ids, mailed links): anything else in a cookie or a URL is not ours,
    /// and never goes into a header.
    package var isRandomToken: Bool {
        utf8.count == 43 && utf8.allSatisfy { byte in
            (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == 45 || byte == 95
        }
    }
}

extension RequestContext {
    /// Where a sign-in made by this request comes from: its browser, coarsely, and network.
    package var signInOrigin: SignedInUsers.Origin {
        .init(device: DeviceLabel.of(userAgent: http.headers["User-Agent"]), network: ClientKey.network(ofKey: clientKey))
    }
}
