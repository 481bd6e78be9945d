import Foundation
import MicroHTTPD
import SignupDomain

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
final class SignedInUsers: Sendable {
    static let plainCookieName = "livesignup_auth"
    static let hostCookieName = "__Host-livesignup_auth"
    /// The name this server sets.
    let cookieName: String
    /// How long a session lasts however much it is used.
    let lifetime: TimeInterval
    let rules: SignInSessionRules
    /// Adds `Secure`, so the cookie is only sent over HTTPS (behind a TLS proxy).
    let secureCookies: Bool
    /// `Domain=` for the cookie, so the application on a sibling host (app.example.com beside
    /// signup.example.com) receives it and its proxy can ask `/auth`; nil keeps it host-only.
    let cookieDomain: String?
    /// Until when `livesignup_auth` is still read while `__Host-livesignup_auth` is set.
    private let plainNameReadUntil: Date?
    private let store: any AccountStore
    private let now: @Sendable () -> Date
    /// Sessions the store confirmed lately, so `/auth` on every request of a page (its
    /// scripts, images, API calls) costs a dictionary look-up, not a database read each.
    private let recentlyConfirmed = Locked<[String: (account: Account, until: Date)]>([:])
    /// Ids the store had no live session for lately: a browser holding an ended session's
    /// cookie asks `/auth` on every request of a page too.
    private let recentlyUnknown = Locked<[String: Date]>([:])
    /// How long a confirmation is trusted: a session ended on another instance (sign-out,
    /// revoke) is refused here at most this much later; on this instance at once.
    static let confirmationLifetime: TimeInterval = 5
    static let confirmationCapacity = 10_000

    init(store: any AccountStore, lifetime: TimeInterval, idleTimeout: TimeInterval, secureCookies: Bool = false,
         cookieDomain: String? = nil, now: @escaping @Sendable () -> Date) {
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

    /// Starts a session for `account`, ending the one `cookieHeader` held (if any); returns
    /// the `Set-Cookie` values that carry it (and clear the old name when it changed).
    func signIn(_ account: Account, replacing cookieHeader: String?) throws -> [String] {
        for previous in sessionIDs(in: cookieHeader) {
            let hash = SignInSessionID.hash(previous)
            forget(hash)
            try store.endSignInSession(idHash: hash)
        }
        let id = SignInSessionID.make()
        let started = now()
        try store.startSignInSession(NewSignInSession(
            idHash: SignInSessionID.hash(id), accountID: account.id,
            createdAt: started, expiresAt: started.addingTimeInterval(lifetime)))
        var cookies = [cookie(id, maxAge: Int(lifetime))]
        if cookieName != Self.plainCookieName { cookies.append(Self.plainCookieName + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax") }
        return cookies
    }

    /// The account a request's cookie is signed in as, if its session is live.
    func account(cookieHeader: String?) throws -> Account? {
        guard let id = sessionID(in: cookieHeader) else { return nil }
        return try account(idHash: SignInSessionID.hash(id), at: now())
    }

    /// What `/auth` learns from a cookie.
    enum ProxyAnswer {
        case signedIn(Account)
        case signedOut
        /// Too many cookies from this client named no live session lately.
        case limited(LimitExceeded)
    }

    /// For `/auth`, which a proxy calls on every request: a cookie is answered from memory
    /// when this instance confirmed or refused it lately; otherwise the store is read, and
    /// the read is paid for from `client`'s allowance for unknown sessions first, given back
    /// when the session is live (so a known session never counts).
    func proxyAnswer(cookieHeader: String?, client: String, unknownSessions: RateLimiter) throws -> ProxyAnswer {
        guard let id = sessionID(in: cookieHeader) else { return .signedOut }
        let hash = SignInSessionID.hash(id)
        let time = now()
        if let confirmed = recentlyConfirmed.withLock({ $0[hash] }), confirmed.until > time { return .signedIn(confirmed.account) }
        if let until = recentlyUnknown.withLock({ $0[hash] }), until > time { return .signedOut }
        do throws(LimitExceeded) {
            try unknownSessions.admit(client)
        } catch {
            return .limited(error)
        }
        guard let account = try account(idHash: hash, at: time) else { return .signedOut }
        unknownSessions.refund(client)
        return .signedIn(account)
    }

    private func account(idHash hash: String, at time: Date) throws -> Account? {
        if let confirmed = recentlyConfirmed.withLock({ $0[hash] }), confirmed.until > time { return confirmed.account }
        let account = try store.signedInAccount(idHash: hash, at: time, rules: rules)
        let until = time.addingTimeInterval(Self.confirmationLifetime)
        if let account {
            recentlyUnknown.withLock { $0[hash] = nil }
            recentlyConfirmed.withLock { Self.insert((account, until), for: hash, into: &$0, at: time, expiry: \.until) }
        } else {
            recentlyConfirmed.withLock { $0[hash] = nil }
            recentlyUnknown.withLock { Self.insert(until, for: hash, into: &$0, at: time, expiry: \.self) }
        }
        return account
    }

    /// Adds an entry to a bounded memory: when full, the expired go; if none had, all go.
    private static func insert<Value>(_ value: Value, for hash: String, into memory: inout [String: Value], at time: Date,
                                      expiry: KeyPath<Value, Date>) {
        if memory.count >= confirmationCapacity {
            memory = memory.filter { $0.value[keyPath: expiry] > time }
            if memory.count >= confirmationCapacity { memory.removeAll(keepingCapacity: true) }
        }
        memory[hash] = value
    }

    private func forget(_ hash: String) {
        recentlyConfirmed.withLock { $0[hash] = nil }
        recentlyUnknown.withLock { $0[hash] = nil }
    }

    /// Ends the request's session, if it has one; returns the `Set-Cookie` values that clear
    /// the cookie either way (under both names).
    func signOut(cookieHeader: String?) throws -> [String] {
        for id in sessionIDs(in: cookieHeader) {
            let hash = SignInSessionID.hash(id)
            forget(hash)
            try store.endSignInSession(idHash: hash)
        }
        var cookies = [cookie("", maxAge: 0)]
        if cookieName != Self.plainCookieName { cookies.append(Self.plainCookieName + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax") }
        return cookies
    }

    /// Deletes the sessions that have ended (the periodic sweep).
    func removeEnded() throws -> Int {
        try store.removeEndedSignInSessions(at: now(), rules: rules)
    }

    private func cookie(_ value: String, maxAge: Int) -> String {
        "\(cookieName)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Lax"
            + (cookieDomain.map { "; Domain=\($0)" } ?? "") + (secureCookies ? "; Secure" : "")
    }

    /// The session id a `Cookie` header carries, if it carries exactly one of ours: two
    /// session cookies (under one name or both) mean one was planted, and neither is believed.
    func sessionID(in cookieHeader: String?) -> String? {
        let ids = sessionIDs(in: cookieHeader)
        return ids.count == 1 ? ids[0] : nil
    }

    /// Every well-formed session id in the header, under the names read now.
    private func sessionIDs(in cookieHeader: String?) -> [String] {
        let readsPlainName = cookieName != Self.plainCookieName && plainNameReadUntil.map { now() < $0 } == true
        let values = HTTPRequest.cookieValues(named: cookieName, in: cookieHeader)
            + (readsPlainName ? HTTPRequest.cookieValues(named: Self.plainCookieName, in: cookieHeader) : [])
        // 43 URL-safe base64 characters (256 bits); anything else is not ours.
        return values.filter { $0.utf8.count == 43 && $0.utf8.allSatisfy { $0.isURLSafeBase64 } }
    }
}

private extension UInt8 {
    var isURLSafeBase64: Bool {
        (65...90).contains(self) || (97...122).contains(self) || (48...57).contains(self) || self == 45 || self == 95
    }
}
