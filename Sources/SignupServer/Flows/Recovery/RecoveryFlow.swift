import MicroHTTPD

/// Recovery: a forgotten password, by a mailed code or link, to a new password.
/// Its rows are its own; the router's table is every flow's rows (`Router.table`).
enum RecoveryFlow: Flow {
    /// The pages it shows (their templates are checked at start).
    static let pages: [any PageView.Type] = [RecoverPage.self]

    static let routes: [Route] = [
        // Account recovery: every answer without a referrer (a link's secret passes through).
        Route(.get, "/recover", answers: .page, limits: [.pages], spentFirst: [.pages], sendsNoReferrer: true) { routes, request in
            routes.recovery?.requestPage(request) ?? APIError.notFound.response
        },
        Route(.post, "/recover", answers: .page, reads: .form, limits: [.mails, .noJavaScript], sendsNoReferrer: true) {
            routes, request in routes.recovery?.start(request) ?? APIError.notFound.response
        },
        Route(.post, "/recover/code", answers: .page, reads: .form, limits: [.noJavaScript, .signins], sendsNoReferrer: true) {
            routes, request in routes.recovery?.checkCode(request) ?? APIError.notFound.response
        },
        Route(.get, "/recover/password", answers: .page, limits: [.pages, .sessions], spentFirst: [.pages],
              sendsNoReferrer: true) { routes, request in
            routes.recovery?.passwordPage(request) ?? APIError.notFound.response
        },
        Route(.post, "/recover/password", answers: .page, reads: .form, limits: [.hashing, .sessions],
              sendsNoReferrer: true) { routes, request in
            routes.recovery?.setPassword(request) ?? APIError.notFound.response
        },
        Route(.post, "/recover/session", answers: .json, limits: [.pages, .sessions], spentFirst: [.pages], sendsNoReferrer: true) {
            routes, request in routes.recovery?.renewSession(request) ?? APIError.notFound.response
        },
    ]
}
