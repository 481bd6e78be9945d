import Identity
import MicroHTTPD
import WebKernel

/// Operations: probes, metrics and the static files.
/// Its rows are its own; the router's table is every flow's rows (`Router.table`).
enum OperationsFlow: Flow {
    /// The pages it shows (their templates are checked at start).
    static let pages: [any PageView.Type] = []

    /// Its rows, their handlers made once from the services the server started with.
    static func routes(_ services: Services) -> [Route] {
        let operations = OperationsRoutes(services)
        return [
            Route(.get, "/healthz", answers: .json) { _ in operations.liveness() },
            Route(.get, "/readyz", answers: .json) { _ in operations.readiness() },
            Route(.get, "/metrics", answers: .json) { operations.exposeMetrics(to: $0.client) },
            Route(.get, "/static/", prefix: true, answers: .json) { operations.staticAsset($0.http) },
        ]
    }
}
