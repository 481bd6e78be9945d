import Foundation
import Identity
import SignupDomain
import WebKernel

/// Signed-in people: their sessions, how recently each browser proved who it is, the open
/// account pages' streams, second factors and passkey ceremonies.
struct SignInServices: Sendable {
    let users: SignedInUsers
    /// Whether this browser proved who it is recently enough for a sensitive change.
    let recent: RecentSignIn
    /// The open `/account` pages' streams, refreshed from the store once a second.
    let accountStreams: AccountStreams
    /// Seals second factors' secrets and keys their recovery codes.
    let secondFactorSeal: SecondFactorSeal
    /// Whether second factors are offered, or required (the flag, else the policy).
    let secondFactorRule: SecondFactorRule
    /// Wrong codes in a row before the app's codes are refused (the policy's).
    let secondFactorLockout: SecondFactorLockout
    let passkeyChallenges: PasskeyChallenges

    init(_ core: Services.Core, _ site: SiteServices) throws {
        let configuration = core.configuration, store = core.store
        users = SignedInUsers(store: store, lifetime: configuration.signInLifetime,
                              idleTimeout: configuration.signInIdleTimeout, secureCookies: site.secureCookies,
                              cookieDomain: configuration.cookieDomain,
                              sessionsPerAccount: configuration.limits.signInSessionsPerAccount, now: core.now)
        recent = RecentSignIn(store: store, signedIn: users, now: core.now, lifetime: configuration.recentSignInLifetime)
        accountStreams = AccountStreams(store: store, signedIn: users, recentSignIn: configuration.recentSignInLifetime,
                                        now: core.now, logger: core.logger)
        secondFactorSeal = SecondFactorSeal(key: try core.key(
            configuration.secondFactorKey, named: "second-factor-key", saying: "second factor's", length: 32,
            make: SecondFactorSeal.makeKey))
        secondFactorRule = configuration.secondFactorRule ?? configuration.policy.settings.secondFactor
        secondFactorLockout = configuration.policy.settings.secondFactorLockout
        passkeyChallenges = PasskeyChallenges(
            key: try core.key(nil, named: "passkey-challenge-key", saying: "passkey challenge", make: PasskeyChallenges.makeKey),
            store: store, lifetime: 300, now: core.now)
    }
}
