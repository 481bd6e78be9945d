import MicroHTTPD

/// One row of the route table (`SignupRoutes.table`): everything about a route except what
/// its handler does. `Allow`, HEAD, the cross-site check, the format of refusals and the
/// metrics `route` label all come from here, so a new route is one row plus its handler.
/// A class: the router hands the same row to the handler and the access log, uncopied.
final class Route: Sendable {
    /// How refusals of this route are answered: a readable page where a person is looking,
    /// JSON for the page script's and programs' endpoints.
    enum Answers: Sendable {
        case page
        case json
    }

    /// Which sign-up or sign-in outcome a refused cross-site post counts as, if any.
    enum Outcome: Sendable {
        case signup
        case signin
    }

    typealias Handler = @Sendable (SignupRoutes, SignupRequest) -> HTTPResponse

    /// The exact path, or for a prefix route (`isPrefix`) the prefix, ending in "/".
    let path: String
    let isPrefix: Bool
    /// The methods it takes; GET brings HEAD with it (answered as GET without the body).
    let methods: [String]
    let answers: Answers
    /// The limits its requests draw from, every one and no other: `RouteLimitsTests` walks
    /// every row as people use it, records each limit asked (`onLimitConsulted`) and holds the
    /// row to them. Each handler still spends from its limiters where its work begins.
    let limits: [RateLimitName]
    /// The outcome metric a refused cross-site post of this route counts in.
    let outcome: Outcome?
    /// The per-address limits the router spends before the handler runs, answered in the
    /// row's format when over: the ones every request of the route costs, whatever it holds
    /// (a subset of `limits`; the handler spends the others where its conditional work begins).
    let spentFirst: [RateLimitName]
    /// Every answer of this route carries `Referrer-Policy: no-referrer` (its URLs hold a
    /// secret or a token: `/verify?token=…`, `/verify?link=…`), whatever the handler sent.
    let sendsNoReferrer: Bool
    let handler: Handler

    init(_ methods: [String], _ path: String, prefix: Bool = false, answers: Answers, limits: [RateLimitName] = [],
         spentFirst: [RateLimitName] = [], outcome: Outcome? = nil, sendsNoReferrer: Bool = false,
         handler: @escaping Handler) {
        precondition(spentFirst.allSatisfy(limits.contains), "\(path): a limit spent first is one of its limits")
        self.path = path
        self.isPrefix = prefix
        self.methods = methods.contains("GET") && !methods.contains("HEAD")
            ? methods.flatMap { $0 == "GET" ? ["GET", "HEAD"] : [$0] } : methods
        self.answers = answers
        self.limits = limits
        self.spentFirst = spentFirst
        self.outcome = outcome
        self.sendsNoReferrer = sendsNoReferrer
        self.handler = handler
        name = prefix ? String(path.dropLast()) : path
        allow = self.methods.joined(separator: ", ")
    }

    /// The metrics `route` label: a fixed set, so clients cannot make labels up.
    let name: String

    /// The `Allow` header of its 405s.
    let allow: String

    func accepts(_ method: String) -> Bool { methods.contains(method) }
}

/// The routes, resolved by one dictionary look-up (or a short prefix scan) per request.
struct RouteTable: Sendable {
    let routes: [Route]
    private let exact: [String: Route]
    private let prefixes: [Route]

    init(_ routes: [Route]) {
        self.routes = routes
        exact = Dictionary(uniqueKeysWithValues: routes.filter { !$0.isPrefix }.map { ($0.path, $0) })
        prefixes = routes.filter(\.isPrefix)
    }

    func resolve(_ path: String) -> Route? {
        exact[path] ?? prefixes.first { path.hasPrefix($0.path) }
    }

    /// The metrics label of a path no route takes.
    static let unrouted = "other"

    /// The metrics label of a path: its route's name, or "other".
    func name(of path: String) -> String {
        resolve(path)?.name ?? Self.unrouted
    }
}
