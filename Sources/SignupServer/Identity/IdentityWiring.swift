import Identity

// The identity services that take their parts from the app's `Services`, made here so that
// the Identity module never sees the app's wiring.

extension SecondStepGate {
    init(_ services: Services) {
        self.init(seal: services.secondFactorSeal, secureCookies: services.signedIn.secureCookies,
                  rule: services.secondFactorRule, logger: services.logger, now: services.now)
    }
}

extension SignInFunnel {
    init(_ services: Services) {
        self.init(gate: SecondStepGate(services), signedIn: services.signedIn, store: services.store, logger: services.logger)
    }
}

extension AccountAnnouncer {
    init(_ services: Services) {
        self.init(accountMails: services.accountMails, mails: services.proofs?.mails, webhooks: services.webhooks)
    }
}

extension ProviderLinker {
    init(_ services: Services) {
        let metrics = services.metrics
        self.init(providers: services.providers, store: services.store, cookies: services.providerCookies,
                  announcer: AccountAnnouncer(services), count: { metrics.provider($0, $1) }, logger: services.logger,
                  now: services.now)
    }
}
