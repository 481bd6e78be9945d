import Identity
import MicroHTTPD
import WebKernel

/// The live form: the sign-up page, its event stream, the typing path, a fresh session for a
/// page whose form the server forgot, and proof-of-work challenges.
/// Its rows are its own; the router's table is every flow's rows (`Router.table`).
enum LiveFormFlow: Flow {
    /// The pages it shows (their templates are checked at start).
    static let pages: [any PageView.Type] = [SignupPage.self]

    /// Spent proofs of work are kept until their challenge would have expired; the price's
    /// memory of each address decays.
    static func sweeps(_ services: Services) -> [Sweep] {
        let store = services.store, pricing = services.form.proofOfWork?.pricing
        return [
            Sweep(what: "expired proofs of work") { try store.removeExpiredProofs(at: $0) },
            Sweep(what: "decayed proof-of-work pressure") { _ in pricing?.sweep(); return 0 },
        ]
    }

    /// Its rows, their handlers made once from the services the server started with.
    static func routes(_ services: Services) -> [Route] {
        let liveForm = LiveFormRoutes(services)
        return [
            Route(.get, "/", answers: .page, limits: [.pages], spentFirst: [.pages]) { liveForm.signupPage($0) },
            Route(.get, "/events", answers: .json, limits: [.sessions]) { try liveForm.events($0) },
            // The typing path reads its own body: only the fields it uses, no language.
            // A recovery's new-password form checks "not your current password" with a hash.
            Route(.post, "/fields", answers: .json, limits: [.edits, .sessions, .lookups, .hashing], spentFirst: [.edits]) {
                try liveForm.fieldEdit($0)
            },
            Route(.post, "/sessions", answers: .json, limits: [.pages], spentFirst: [.pages]) { liveForm.newSession($0) },
            Route(.get, "/challenge", answers: .json, limits: [.pages], spentFirst: [.pages]) { try liveForm.challenge($0) },
        ]
    }
}
