import MicroHTTPD

/// Operations: probes, metrics and the static files.
/// Its rows are its own; the router's table is every flow's rows (`Router.table`).
enum OperationsFlow: Flow {
    /// The pages it shows (their templates are checked at start).
    static let pages: [any PageView.Type] = []

    static let routes: [Route] = [
        Route(.get, "/healthz", answers: .json) { routes, _ in routes.operations.liveness() },
        Route(.get, "/readyz", answers: .json) { routes, _ in routes.operations.readiness() },
        Route(.get, "/metrics", answers: .json) { $0.operations.exposeMetrics(to: $1.client) },
        Route(.get, "/static/", prefix: true, answers: .json) { $0.operations.staticAsset($1.http) },
    ]
}
