import Identity
import MicroHTTPD
import WebKernel

/// Settings: the signed-in person's account page and every change made from it (password,
/// address, second factor, passkeys, providers, sessions, the download, deletion).
/// Its rows are its own; the router's table is every flow's rows (`Router.table`).
enum SettingsFlow: Flow {
    /// The pages it shows (their templates are checked at start).
    static let pages: [any PageView.Type] = [AccountPage.self, DeletionPage.self, AddressPage.self]

    /// An address change is kept until its code and its undo link expire; a deleted
    /// account's username stays reserved for a while.
    static func sweeps(_ services: Services) -> [Sweep] {
        let store = services.store
        return [
            Sweep(what: "expired address changes") { try store.removeExpiredEmailChanges(at: $0) },
            Sweep(what: "usernames of deleted accounts (free again)") { try store.removeEndedUsernameReservations(at: $0) },
        ]
    }

    /// Its rows, their handlers made once from the services the server started with.
    static func routes(_ services: Services) -> [Route] {
        let accountPage = AccountRoutes(services)
        let accountChanges = AccountChangeRoutes(services)
        // Nil when no mail can be sent: its rows are then 404.
        let accountEmail = AccountEmailRoutes(services)
        let secondFactor = SecondFactorRoutes(services)
        let passkeys = PasskeyRoutes(services)
        let providers = ProviderRoutes(services)
        return [
            // The signed-in person's page (issue 43). Changes that matter need a recent sign-in in
            // this browser (`recentSignIn:`): the router asks for it before the handler runs.
            Route(.get, "/account", answers: .page, limits: [.pages], spentFirst: [.pages],
                  forAccount: { accountPage.page($0, $1) }),
            // The page's live list of devices (and how long changes stay open).
            Route(.get, "/account/events", answers: .json, limits: [.pages], spentFirst: [.pages],
                  forAccount: { try accountPage.events($0, $1) }),
            Route(.get, "/account/password", answers: .page, limits: [.pages, .sessions], spentFirst: [.pages],
                  recentSignIn: .password, forAccount: { accountChanges.passwordPage($0, $1) }),
            Route(.post, "/account/password", answers: .page, reads: .form, limits: [.signins, .hashing, .sessions],
                  recentSignIn: .password, forAccount: { accountChanges.changePassword($0, $1) }),
            Route(.post, "/account/password/session", answers: .json, limits: [.pages, .sessions], spentFirst: [.pages],
                  recentSignIn: .password) { try accountChanges.renewPasswordSession($0) },
            // A new address: checked live, proved by a mailed code; the old one can undo it for a week.
            Route(.get, "/account/email", answers: .page, limits: [.pages, .sessions], spentFirst: [.pages], recentSignIn: .email) {
                request in try AccountEmailRoutes.forAccount(request, accountEmail) { $0.page(request, $1) }
            },
            Route(.post, "/account/email/session", answers: .json, limits: [.pages, .sessions], spentFirst: [.pages],
                  recentSignIn: .email) { request in try offered(accountEmail).renewSession(request) },
            Route(.post, "/account/email", answers: .page, reads: .form, limits: [.mails, .sessions], recentSignIn: .email) {
                request in try AccountEmailRoutes.forAccount(request, accountEmail) { $0.start(request, $1) }
            },
            Route(.get, "/account/email/code", answers: .page, limits: [.pages], spentFirst: [.pages], signedIn: true) {
                request in try AccountEmailRoutes.forAccount(request, accountEmail) { try $0.codePage(request, $1) }
            },
            Route(.post, "/account/email/code", answers: .page, reads: .form, signedIn: true) {
                request in try AccountEmailRoutes.forAccount(request, accountEmail) { try $0.checkCode(request, $1) }
            },
            Route(.get, "/account/email/undo", answers: .page, limits: [.pages], spentFirst: [.pages], sendsNoReferrer: true) {
                request in try offered(accountEmail).undoPage(request)
            },
            Route(.post, "/account/email/undo", answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages],
                  sendsNoReferrer: true) {
                request in try offered(accountEmail).undo(request)
            },
            // A second factor: set up, renewed and removed behind a recent sign-in; asked for at sign-in.
            Route(.get, "/account/second-factor", answers: .page, limits: [.pages], spentFirst: [.pages],
                  recentSignIn: .secondFactor, forAccount: { try secondFactor.page($0, $1) }),
            Route(.post, "/account/second-factor", answers: .page, reads: .form, limits: [.signins], recentSignIn: .secondFactor,
                  forAccount: { try secondFactor.enable($0, $1) }),
            // Changing the factor asks for a current code too (paid for as a sign-in's code is).
            Route(.post, "/account/second-factor/codes", answers: .page, reads: .form, limits: [.signins], recentSignIn: .secondFactor,
                  forAccount: { try secondFactor.newCodes($0, $1) }),
            Route(.post, "/account/second-factor/remove", answers: .page, reads: .form, limits: [.signins], recentSignIn: .secondFactor,
                  forAccount: { try secondFactor.remove($0, $1) }),
            Route(.get, "/account/export", answers: .page, limits: [.pages], spentFirst: [.pages], recentSignIn: .export,
                  forAccount: { try accountChanges.export($0, $1) }),
            Route(.get, "/account/delete", answers: .page, limits: [.pages], spentFirst: [.pages], recentSignIn: .delete,
                  forAccount: { accountChanges.deletePage($0, $1) }),
            Route(.post, "/account/delete", answers: .page, reads: .form, recentSignIn: .delete,
                  forAccount: { try accountChanges.delete($0, $1) }),
            Route(.post, "/account/passkeys/rename", answers: .page, reads: .form,
                  forAccount: { try accountPage.renamePasskey($0, $1) }),
            Route(.post, "/account/passkeys/remove", answers: .page, reads: .form, recentSignIn: .passkeys,
                  forAccount: { try accountPage.removePasskey($0, $1) }),
            Route(.post, "/account/sessions/end", answers: .page, reads: .form, forAccount: { try accountPage.endSession($0, $1) }),
            Route(.post, "/account/confirm", answers: .page, reads: .form, limits: [.signins, .hashing],
                  forAccount: { accountPage.confirm($0, $1) }),
            Route(.post, "/account/sessions/end-others", answers: .page, reads: .form,
                  forAccount: { try accountPage.endOtherSessions($0, $1) }),
            // A stolen cookie alone adds no passkey: a recent sign-in, and the owner is told.
            Route(.post, "/account/passkeys/options", answers: .json, reads: .form, limits: [.pages], spentFirst: [.pages],
                  recentSignIn: .passkeys) { passkeys.addOptions($0) },
            Route(.post, "/account/passkeys", answers: .json, reads: .form, limits: [.passkeys], spentFirst: [.passkeys],
                  recentSignIn: .passkeys) { passkeys.add($0) },
            Route(.post, "/account/providers/link", answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages],
                  recentSignIn: .providers) { providers.link($0) },
            Route(.post, "/account/providers/unlink", answers: .page, reads: .form, recentSignIn: .providers) { request in
                providers.unlink(request) { accountPage.page($0, $1, error: $2, status: $3) }
            },
            Route(.post, "/account/providers/confirm", answers: .page, reads: .form, limits: [.pages], spentFirst: [.pages],
                  signedIn: true) { providers.confirm($0) },
        ]
    }
}
