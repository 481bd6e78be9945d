import Identity
import MicroHTTPD
import WebKernel

/// Recovery: a forgotten password, by a mailed code or link, to a new password.
/// Its rows are its own; the router's table is every flow's rows (`Router.table`).
enum RecoveryFlow: Flow {
    /// The pages it shows (their templates are checked at start).
    static let pages: [any PageView.Type] = [RecoverPage.self]

    /// A recovery is kept until its code and link expire.
    static func sweeps(_ services: Services) -> [Sweep] {
        let store = services.store
        return [Sweep(what: "expired account recoveries") { try store.removeExpiredRecoveries(at: $0) }]
    }

    /// Its rows, their handlers made once from the services the server started with.
    static func routes(_ services: Services) -> [Route] {
        // Nil when no mail can be sent: every row is then 404.
        let recovery = RecoveryRoutes(services)
        return [
            // Account recovery: every answer without a referrer (a link's secret passes through).
            Route(.get, "/recover", answers: .page, limits: [.pages], spentFirst: [.pages], sendsNoReferrer: true) { request in
                try offered(recovery).requestPage(request)
            },
            Route(.post, "/recover", answers: .page, reads: .form, limits: [.mails, .noJavaScript], sendsNoReferrer: true) {
                request in try offered(recovery).start(request)
            },
            Route(.post, "/recover/code", answers: .page, reads: .form, limits: [.noJavaScript, .signins], sendsNoReferrer: true) {
                request in try offered(recovery).checkCode(request)
            },
            Route(.get, "/recover/password", answers: .page, limits: [.pages, .sessions], spentFirst: [.pages],
                  sendsNoReferrer: true) { request in
                try offered(recovery).passwordPage(request)
            },
            Route(.post, "/recover/password", answers: .page, reads: .form, limits: [.hashing, .sessions],
                  sendsNoReferrer: true) { request in
                try offered(recovery).setPassword(request)
            },
            Route(.post, "/recover/session", answers: .json, limits: [.pages, .sessions], spentFirst: [.pages], sendsNoReferrer: true) {
                request in try offered(recovery).renewSession(request)
            },
        ]
    }
}
