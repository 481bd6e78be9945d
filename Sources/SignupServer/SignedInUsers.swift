import Foundation

/// Who is signed in, by the random id in their `livesignup_auth` cookie. Kept in memory:
/// after a restart people sign in again, which the small sign-in page exists for.
final class SignedInUsers: @unchecked Sendable {
    static let cookieName = "livesignup_auth"
    let lifetime: TimeInterval
    /// Adds `Secure`, so the cookie is only sent over HTTPS (behind a TLS proxy).
    let secureCookies: Bool
    private let now: @Sendable () -> Date
    private let lock = NSLock()
    private var users: [String: (username: String, expires: Date)] = [:]

    init(lifetime: TimeInterval = 12 * 60 * 60, secureCookies: Bool = false, now: @escaping @Sendable () -> Date) {
        self.lifetime = lifetime
        self.secureCookies = secureCookies
        self.now = now
    }

    /// Signs `username` in and returns the `Set-Cookie` value for it.
    func signIn(username: String) -> String {
        let id = FormSessionRegistry.makeRandomID()
        let expires = now().addingTimeInterval(lifetime)
        lock.withLock {
            users = users.filter { $0.value.expires > now() }
            users[id] = (username, expires)
        }
        return "\(Self.cookieName)=\(id); Path=/; Max-Age=\(Int(lifetime)); HttpOnly; SameSite=Lax"
            + (secureCookies ? "; Secure" : "")
    }

    /// The signed-in username for a request's `Cookie` header, if its id is known and fresh.
    func username(cookieHeader: String?) -> String? {
        guard let cookieHeader else { return nil }
        for pair in cookieHeader.split(separator: ";") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0] == Self.cookieName else { continue }
            let id = String(parts[1])
            let found = lock.withLock { users[id] }
            if let found, found.expires > now() { return found.username }
        }
        return nil
    }
}
