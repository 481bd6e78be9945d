import Foundation
import SignupDomain
import WebKernel

/// "A sign-in in the last few minutes" (issue 43): changing a password or an address, adding
/// or removing a passkey, exporting and deleting the account ask that the person proved who
/// they are recently in this browser (`SignInSessionSummary.authenticatedAt`: the sign-in, or
/// `POST /account/confirm`), so a stolen cookie alone changes nothing that matters. A route
/// row that needs it says `recentSignIn: true` and the router asks here before its handler.
package struct RecentSignIn: Sendable {
    package let store: any AccountStore
    package let signedIn: SignedInUsers
    package let now: @Sendable () -> Date
    /// How long after a sign-in (or a confirmation) sensitive changes stay open
    /// (`--recent-signin-minutes`).
    package let lifetime: TimeInterval

    package init(store: any AccountStore, signedIn: SignedInUsers, now: @escaping @Sendable () -> Date, lifetime: TimeInterval) {
        self.store = store
        self.signedIn = signedIn
        self.now = now
        self.lifetime = lifetime
    }

    /// Until when this browser's sensitive changes are open; nil when they are closed (no
    /// proof within `lifetime`, or the session is gone).
    package func openUntil(for account: Account, cookieHeader: String?) throws -> Date? {
        guard let current = signedIn.sessionHash(in: cookieHeader) else { return nil }
        let time = now()
        return try store.signInSessions(ofAccount: account.id, at: time, rules: signedIn.rules)
            .first { $0.idHash == current }
            .map { $0.authenticatedAt.addingTimeInterval(lifetime) }
            .flatMap { $0 > time ? $0 : nil }
    }

    package typealias Continuation = SignInContinuation
}
