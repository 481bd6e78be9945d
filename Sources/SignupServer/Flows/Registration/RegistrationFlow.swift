import MicroHTTPD

/// Registration: the sign-up's submit, the address proof that completes it (`/verify`), and a
/// passkey made on the form.
/// Its rows are its own; the router's table is every flow's rows (`Router.table`).
enum RegistrationFlow: Flow {
    /// The pages it shows (their templates are checked at start).
    static let pages: [any PageView.Type] = [VerifyPage.self]

    static let routes: [Route] = [
        Route(.post, "/signup", answers: .page, reads: .form, limits: [.signups, .noJavaScript, .lookups, .mails, .hashing],
              outcome: .signup) { $0.signup.submit($1) },
        Route(.get, "/verify", answers: .page, sendsNoReferrer: true) { routes, request in
            routes.verification?.page(request) ?? APIError.notFound.response
        },
        Route(.post, "/verify", answers: .page, reads: .form, limits: [.noJavaScript], outcome: .signup,
              sendsNoReferrer: true) { routes, request in
            routes.verification?.verify(request) ?? APIError.notFound.response
        },
        Route(.post, "/verify/resend", answers: .page, reads: .form, limits: [.mails], sendsNoReferrer: true) { routes, request in
            routes.verification?.resend(request) ?? APIError.notFound.response
        },
        Route(.post, "/verify/change", answers: .page, reads: .form, sendsNoReferrer: true) { routes, request in
            routes.verification == nil ? APIError.notFound.response : routes.signup.changeAddress(request)
        },
        Route(.post, "/passkeys/options", answers: .json, reads: .form, limits: [.pages], spentFirst: [.pages]) {
            $0.passkeys.registrationOptions($1)
        },
        Route(.post, "/passkeys/register", answers: .json, reads: .form, limits: [.passkeys], spentFirst: [.passkeys]) {
            $0.passkeys.register($1)
        },
    ]
}
