import Identity
import MicroHTTPD
import WebKernel

/// Registration: the sign-up's submit, the address proof that completes it (`/verify`), and a
/// passkey made on the form.
/// Its rows are its own; the router's table is every flow's rows (`Router.table`).
enum RegistrationFlow: Flow {
    /// The pages it shows (their templates are checked at start).
    static let pages: [any PageView.Type] = [VerifyPage.self]

    /// A sign-up waiting for its address is kept until its code expires.
    static func sweeps(_ services: Services) -> [Sweep] {
        let store = services.store
        return [Sweep(what: "expired pending sign-ups") { try store.removeExpiredPendingSignups(at: $0) }]
    }

    /// Its rows, their handlers made once from the services the server started with.
    static func routes(_ services: Services) -> [Route] {
        let signup = SignupSubmitRoutes(services)
        // /verify is 404 when addresses are not proved (`--email-verification off`).
        let verification = VerificationRoutes(services)
        let passkeys = PasskeyRoutes(services)
        return [
            Route(.post, "/signup", answers: .page, reads: .form, limits: [.signups, .noJavaScript, .lookups, .mails, .hashing],
                  outcome: .signup) { signup.submit($0) },
            Route(.get, "/verify", answers: .page, sendsNoReferrer: true) { request in
                try offered(verification).page(request)
            },
            Route(.post, "/verify", answers: .page, reads: .form, limits: [.noJavaScript], outcome: .signup,
                  sendsNoReferrer: true) { request in
                try offered(verification).verify(request)
            },
            Route(.post, "/verify/resend", answers: .page, reads: .form, limits: [.mails], sendsNoReferrer: true) { request in
                try offered(verification).resend(request)
            },
            Route(.post, "/verify/change", answers: .page, reads: .form, sendsNoReferrer: true) { request in
                _ = try offered(verification)
                return signup.changeAddress(request)
            },
            Route(.post, "/passkeys/options", answers: .json, reads: .form, limits: [.pages], spentFirst: [.pages]) {
                passkeys.registrationOptions($0)
            },
            Route(.post, "/passkeys/register", answers: .json, reads: .form, limits: [.passkeys], spentFirst: [.passkeys]) {
                passkeys.register($0)
            },
        ]
    }
}
