import Identity

// The identity services that take their parts from the app's `Services`, made here so that
// the Identity module never sees the app's wiring.

extension SecondStepGate {
    init(_ services: Services) {
        self.init(seal: services.signIn.secondFactorSeal, secureCookies: services.signIn.users.secureCookies,
                  rule: services.signIn.secondFactorRule, logger: services.logger, now: services.now)
    }
}

extension SignInFunnel {
    init(_ services: Services) {
        self.init(gate: SecondStepGate(services), signedIn: services.signIn.users, store: services.store, logger: services.logger)
    }
}

extension AccountAnnouncer {
    init(_ services: Services) {
        self.init(accountMails: services.outbox.accountMails, mails: services.outbox.proofs?.mails, webhooks: services.outbox.webhooks)
    }
}

extension ProviderLinker {
    init(_ services: Services) {
        let metrics = services.metrics
        self.init(providers: services.providerSignIn.byID, store: services.store, cookies: services.providerSignIn.cookies,
                  announcer: AccountAnnouncer(services), count: { metrics.provider($0, $1) }, logger: services.logger,
                  now: services.now)
    }
}

extension SecondFactorCheck {
    /// A refused code counts as a failed sign-in and raises the client's proof-of-work price.
    init(_ services: Services) {
        let metrics = services.metrics, proofOfWork = services.form.proofOfWork
        self.init(store: services.store, limiters: services.site.limiters, seal: services.signIn.secondFactorSeal,
                  announcer: AccountAnnouncer(services), lockout: services.signIn.secondFactorLockout,
                  outcomes: Outcomes(wrong: { clientKey in
                                         metrics.signin(.failure)
                                         proofOfWork?.pricing.record(.failedSignin, addressKey: clientKey)
                                     },
                                     limited: { metrics.signin(.rateLimited) }),
                  logger: services.logger, now: services.now)
    }
}
