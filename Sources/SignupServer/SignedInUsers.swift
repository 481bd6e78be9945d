import Foundation
import MicroHTTPD
import SignupDomain

/// Who is signed in, by the random id in their `livesignup_auth` cookie. The sessions live in
/// the account store (only each id's SHA-256), so every instance behind a proxy knows them
/// and a restart signs nobody out. Every sign-in and sign-up gets a fresh id (no fixation).
final class SignedInUsers: Sendable {
    static let cookieName = "livesignup_auth"
    /// How long a session lasts however much it is used.
    let lifetime: TimeInterval
    let rules: SignInSessionRules
    /// Adds `Secure`, so the cookie is only sent over HTTPS (behind a TLS proxy).
    let secureCookies: Bool
    /// `Domain=` for the cookie, so the application on a sibling host (app.example.com beside
    /// signup.example.com) receives it and its proxy can ask `/auth`; nil keeps it host-only.
    let cookieDomain: String?
    private let store: any AccountStore
    private let now: @Sendable () -> Date
    /// Sessions the store confirmed lately, so `/auth` on every request of a page (its
    /// scripts, images, API calls) costs a dictionary look-up, not a database read each.
    private let recentlyConfirmed = Locked<[String: (account: Account, until: Date)]>([:])
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
    }

    /// Starts a session for `account`; returns the `Set-Cookie` value that carries it.
    func signIn(_ account: Account) throws -> String {
        let id = SignInSessionID.make()
        let started = now()
        try store.startSignInSession(NewSignInSession(
            idHash: SignInSessionID.hash(id), accountID: account.id,
            createdAt: started, expiresAt: started.addingTimeInterval(lifetime)))
        return cookie(id, maxAge: Int(lifetime))
    }

    /// The account a request's cookie is signed in as, if its session is live.
    func account(cookieHeader: String?) throws -> Account? {
        guard let id = Self.sessionID(in: cookieHeader) else { return nil }
        let hash = SignInSessionID.hash(id)
        let time = now()
        if let confirmed = recentlyConfirmed.withLock({ $0[hash] }), confirmed.until > time { return confirmed.account }
        let account = try store.signedInAccount(idHash: hash, at: time, rules: rules)
        recentlyConfirmed.withLock { confirmed in
            guard let account else {
                confirmed[hash] = nil
                return
            }
            if confirmed.count >= Self.confirmationCapacity {
                confirmed = confirmed.filter { $0.value.until > time }
                if confirmed.count >= Self.confirmationCapacity { confirmed.removeAll(keepingCapacity: true) }
            }
            confirmed[hash] = (account, time.addingTimeInterval(Self.confirmationLifetime))
        }
        return account
    }

    /// Ends the request's session, if it has one; returns the `Set-Cookie` value that clears
    /// the cookie either way.
    func signOut(cookieHeader: String?) throws -> String {
        if let id = Self.sessionID(in: cookieHeader) {
            let hash = SignInSessionID.hash(id)
            recentlyConfirmed.withLock { $0[hash] = nil }
            try store.endSignInSession(idHash: hash)
        }
        return cookie("", maxAge: 0)
    }

    /// Deletes the sessions that have ended (the periodic sweep).
    func removeEnded() throws -> Int {
        try store.removeEndedSignInSessions(at: now(), rules: rules)
    }

    private func cookie(_ value: String, maxAge: Int) -> String {
        "\(Self.cookieName)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Lax"
            + (cookieDomain.map { "; Domain=\($0)" } ?? "") + (secureCookies ? "; Secure" : "")
    }

    /// The session id a `Cookie` header carries, if it looks like one of ours.
    static func sessionID(in cookieHeader: String?) -> String? {
        guard let cookieHeader else { return nil }
        for pair in cookieHeader.split(separator: ";") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0] == cookieName else { continue }
            let id = parts[1]
            // 43 URL-safe base64 characters (256 bits); anything else is not ours.
            if id.utf8.count == 43, id.utf8.allSatisfy({ $0.isURLSafeBase64 }) { return String(id) }
        }
        return nil
    }
}

private extension UInt8 {
    var isURLSafeBase64: Bool {
        (65...90).contains(self) || (97...122).contains(self) || (48...57).contains(self) || self == 45 || self == 95
    }
}
