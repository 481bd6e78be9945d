import Foundation
import SignupDomain

/// "A sign-in in the last few minutes" (issue 43): changing a password or an address, adding
/// or removing a passkey, exporting and deleting the account ask that the person proved who
/// they are recently in this browser (`SignInSessionSummary.authenticatedAt`: the sign-in, or
/// `POST /account/confirm`), so a stolen cookie alone changes nothing that matters. A route
/// row that needs it says `recentSignIn: true` and the router asks here before its handler.
struct RecentSignIn: Sendable {
    let store: any AccountStore
    let signedIn: SignedInUsers
    let now: @Sendable () -> Date
    /// How long after a sign-in (or a confirmation) sensitive changes stay open
    /// (`--recent-signin-minutes`).
    let lifetime: TimeInterval

    /// Until when this browser's sensitive changes are open; nil when they are closed (no
    /// proof within `lifetime`, or the session is gone).
    func openUntil(for account: Account, cookieHeader: String?) throws -> Date? {
        guard let current = signedIn.sessionHash(in: cookieHeader) else { return nil }
        let time = now()
        return try store.signInSessions(ofAccount: account.id, at: time, rules: signedIn.rules)
            .first { $0.idHash == current }
            .map { $0.authenticatedAt.addingTimeInterval(lifetime) }
            .flatMap { $0 > time ? $0 : nil }
    }

    /// The `continue` a closed change names (`/account?continue=password`): where
    /// `POST /account/confirm` leads once the person has confirmed. Only these: anything else
    /// posted there leads to `/account`.
    enum Continuation: String, CaseIterable, Sendable {
        case account
        case password
        case email
        case secondFactor = "second-factor"
        case delete
        case export
        case passkeys
        case providers

        /// The page the confirmation leads to.
        var path: String {
            switch self {
            case .account: return "/account"
            case .password: return "/account/password"
            case .email: return "/account/email"
            case .secondFactor: return "/account/second-factor"
            case .delete: return "/account/delete"
            case .export: return "/account/export"
            case .passkeys: return "/account#passkeys"
            case .providers: return "/account#providers"
            }
        }

        /// The form field (and query parameter) that carries it.
        static let field = "continue"
    }
}
