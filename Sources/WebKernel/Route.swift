import MicroHTTPD
import SignupDomain

/// One row of the route table (`Router.table`, every flow's `routes`): one method of one path, and everything
/// about it except what its handler does. The router applies the row before the handler runs
/// (the body limit, the cross-site check, the limits every request of it spends, the posted
/// form, the visitor's language and `return_to`) and after (`Referrer-Policy`, the metric,
/// the access line); `Allow` and HEAD come from the rows of a path. A new route is one row
/// plus its handler.
/// A class: the router hands the same row to the handler and the access log, uncopied.
package final class Route: Sendable {
    /// How refusals of this route are answered: a readable page where a person is looking,
    /// JSON for the page script's and programs' endpoints.
    package enum Answers: Sendable {
        case page
        case json
    }

    /// What the router reads from the request for the handler, before it runs.
    package enum Reads: Sendable {
        /// Nothing from the body: the query is all (GET), or the handler reads the body
        /// itself (`/fields`, the typing path, which decodes only what it uses).
        case query
        /// An urlencoded form, decoded once (`RequestContext.form`); a body that is not one
        /// is answered 415 or 400 without the handler.
        case form
    }

    /// Which sign-up or sign-in outcome a refused cross-site post counts as, if any.
    package enum Outcome: Sendable {
        case signup
        case signin
    }

    /// A handler may let an error of the account store through (`try`): the router answers it
    /// with the one 503 in the row's form and logs it (`Refusals.storeUnavailable`).
    package typealias Handler = @Sendable (RequestContext) throws -> HTTPResponse
    /// A handler that acts for the signed-in person: it is given the account, never an
    /// optional one (the router answered a signed-out person and a store that could not
    /// say, `RequestContext.forAccount`).
    package typealias AccountHandler = @Sendable (RequestContext, Account) throws -> HTTPResponse

    package let method: HTTPMethod
    /// The exact path, or for a prefix route (`isPrefix`) the prefix, ending in "/".
    package let path: String
    package let isPrefix: Bool
    package let answers: Answers
    package let reads: Reads
    /// Whether the router works out the visitor's language and `return_to` for the handler:
    /// every page and every posted form. The typing path and the proxy's `/auth` never
    /// negotiate a language they do not show.
    package let speaks: Bool
    /// The limits its requests draw from, every one and no other: `RouteLimitsTests` walks
    /// every row as people use it, records each limit asked (`onLimitConsulted`) and holds the
    /// row to them.
    package let limits: [RateLimitName]
    /// The outcome metric a refused cross-site post of this route counts in.
    package let outcome: Outcome?
    /// The per-address limits the router spends before the handler runs, answered in the
    /// row's format when over: the ones every request of the route costs, whatever it holds
    /// (a subset of `limits`; the handler spends the others where its conditional work begins).
    package let spentFirst: [RateLimitName]
    /// Every answer of this route carries `Referrer-Policy: no-referrer` (its URLs hold a
    /// secret or a token: `/verify?token=…`, `/verify?link=…`), whatever the handler sent.
    package let sendsNoReferrer: Bool
    /// Whether posts from other sites are its purpose, not an attack on it: an endpoint whose
    /// caller proves itself in the request (an application's secret, a token) and never by
    /// the browser's cookies, so a page elsewhere gains nothing by posting to it (the OpenID
    /// provider's token, revocation and introspection endpoints). Never on a row that reads
    /// the signed-in session.
    package let acceptsCrossSite: Bool
    /// Whether its handler acts for the signed-in person: the router looks the session up
    /// once (`RequestContext.signedIn`) and the handler answers a signed-out one in its own
    /// words (a redirect to `/signin`, a passkey refusal).
    package let readsSignedIn: Bool
    /// Whether it changes something that needs a recent sign-in in this browser
    /// (`RecentSignIn`): the router answers a signed-in person without one before the handler
    /// runs (a page: to `/account`, which asks to confirm, then continues to `continuation`;
    /// JSON: 403 `recent_signin_required`). A signed-out one reaches the handler, which
    /// answers them in its own words. Implies `readsSignedIn`.
    package let needsRecentSignIn: Bool
    /// Where the confirmation leads back to, when it needs a recent sign-in.
    package let continuation: SignInContinuation?
    package let handler: Handler

    package init(_ method: HTTPMethod, _ path: String, prefix: Bool = false, answers: Answers, reads: Reads = .query,
         limits: [RateLimitName] = [], spentFirst: [RateLimitName] = [], outcome: Outcome? = nil,
         sendsNoReferrer: Bool = false, signedIn: Bool = false, recentSignIn: SignInContinuation? = nil,
         acceptsCrossSite: Bool = false, handler: @escaping Handler) {
        precondition(spentFirst.allSatisfy(limits.contains), "\(path): a limit spent first is one of its limits")
        precondition(!(acceptsCrossSite && (signedIn || recentSignIn != nil)), "\(path): a cross-site row reads no session")
        self.acceptsCrossSite = acceptsCrossSite
        precondition(method != .head, "\(path): HEAD is answered by the GET row")
        self.method = method
        self.path = path
        self.isPrefix = prefix
        self.answers = answers
        self.reads = reads
        speaks = answers == .page || reads == .form
        self.limits = limits
        self.spentFirst = spentFirst
        self.outcome = outcome
        self.sendsNoReferrer = sendsNoReferrer
        needsRecentSignIn = recentSignIn != nil
        continuation = recentSignIn
        readsSignedIn = signedIn || needsRecentSignIn
        self.handler = handler
        name = prefix ? String(path.dropLast()) : path
    }

    /// A row that acts for the signed-in person (`signedIn`, or a change behind
    /// `recentSignIn`): its handler gets the account; a signed-out person is sent to sign in
    /// and back to `/account` (a JSON row answers the 401 `signed_out`), and a store that
    /// could not say is a 503, both by the router.
    package convenience init(_ method: HTTPMethod, _ path: String, answers: Answers, reads: Reads = .query, limits: [RateLimitName] = [],
         spentFirst: [RateLimitName] = [], recentSignIn: SignInContinuation? = nil,
         forAccount handler: @escaping AccountHandler) {
        self.init(method, path, answers: answers, reads: reads, limits: limits, spentFirst: spentFirst,
                  signedIn: true, recentSignIn: recentSignIn) { request in
            try request.forAccount { try handler(request, $0) }
        }
    }

    /// The metrics `route` label, shared by the rows of one path: a fixed set, so clients
    /// cannot make labels up.
    package let name: String
}

/// The rows of one path, by method. A class with a slot per method: every request resolves
/// one, and neither a copy of its fields nor a hashed look-up is paid for it.
package final class PathRoutes: Sendable {
    /// The row of each method, at `HTTPMethod.position`; HEAD's slot holds GET's row (it is
    /// answered by it, without the body: here and nowhere else).
    private let slots: [Route?]
    /// The `Allow` header of its 405s: its methods, HEAD beside GET.
    package let allow: String
    /// The metrics label.
    package let name: String
    /// Any row of the path, for what all of them share (pages or JSON, for a refusal made
    /// before the method is known).
    package let any: Route

    package init(_ rows: [Route]) {
        var slots = [Route?](repeating: nil, count: HTTPMethod.allCases.count)
        for row in rows { slots[row.method.position] = row }
        if let get = slots[HTTPMethod.get.position] { slots[HTTPMethod.head.position] = get }
        self.slots = slots
        allow = HTTPMethod.allCases.filter { slots[$0.position] != nil }.map(\.rawValue).joined(separator: ", ")
        name = rows[0].name
        any = slots[HTTPMethod.get.position] ?? rows[0]
    }

    /// The row that answers `method`, if the path has one.
    package func route(for method: HTTPMethod?) -> Route? {
        method.flatMap { slots[$0.position] }
    }
}

/// The routes, resolved by one dictionary look-up (or a short prefix scan) per request.
package struct RouteTable: Sendable {
    package let routes: [Route]
    private let exact: [String: PathRoutes]
    private let prefixes: [(prefix: String, routes: PathRoutes)]

    package init(_ routes: [Route]) {
        self.routes = routes
        let byPath = Dictionary(grouping: routes, by: \.path)
        for (path, rows) in byPath {
            precondition(Set(rows.map(\.method)).count == rows.count, "\(path): one row per method")
            precondition(Set(rows.map(\.isPrefix)).count == 1, "\(path): all rows exact or all prefixes")
        }
        exact = byPath.filter { !$0.value[0].isPrefix }.mapValues(PathRoutes.init)
        prefixes = byPath.filter { $0.value[0].isPrefix }.map { ($0.key, PathRoutes($0.value)) }
    }

    package func resolve(_ path: String) -> PathRoutes? {
        exact[path] ?? prefixes.first { path.hasPrefix($0.prefix) }?.routes
    }

    /// The metrics label of a path no route takes.
    package static let unrouted = "other"

    /// The metrics label of a path: its route's name, or "other".
    package func name(of path: String) -> String {
        resolve(path)?.name ?? Self.unrouted
    }
}

