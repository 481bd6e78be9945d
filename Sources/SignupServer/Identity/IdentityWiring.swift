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
