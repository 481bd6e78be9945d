import Identity
import MicroHTTPD
import WebKernel

/// What operators and browsers fetch besides the form: the probes, the metrics and the
/// fingerprinted static files.
struct OperationsRoutes: Sendable {
    let health: HealthChecks
    /// `/metrics`: the Prometheus text and who may read it; nil answers `404` to everyone.
    let metricsExport: MetricsExport?
    let assets: StaticAssets

    init(_ services: Services) {
        let store = services.store, metrics = services.metrics, now = services.now
        let sessions = services.form.sessions, server = services.core.server, deliveries = services.deliveries
        let funnel = services.form.funnel
        // `/readyz` turns 503 once a stop begins.
        let stopping = services.core.stopping
        health = HealthChecks(store: store, isStopping: { stopping.withLock { $0 } })
        metricsExport = services.configuration.metricsExport.map { export in
            // Gauges are read at scrape time rather than updated on every change.
            MetricsExport(allowed: export.allowed) {
                for delivery in deliveries {
                    if let status = try? store.outboxStatus(channel: delivery.channel) {
                        metrics.outboxes.record(delivery.channel, status, now: now())
                    }
                }
                metrics.formSessions.record(sessions.count)
                metrics.eventStreams.record(server.server?.openStreamCount ?? 0)
                // The funnel's cells are read as they are (no swift-metrics handler: see FormFunnel).
                var text = export.render()
                funnel.renderPrometheus(into: &text)
                return text
            }
        }
        assets = services.site.assets
    }

    func liveness() -> HTTPResponse { health.liveness() }
    func readiness() -> HTTPResponse { health.readiness() }

    /// Prometheus text, to loopback and `--metrics-allow` addresses only; `404` to anyone
    /// else, as if there were nothing here.
    func exposeMetrics(to client: String) -> HTTPResponse {
        guard let metricsExport, metricsExport.allows(client) else { return APIError.notFound.response }
        var response = HTTPResponse(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                    body: metricsExport.render())
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    /// `/static/NAME`: the fingerprinted assets.
    func staticAsset(_ request: HTTPRequest) -> HTTPResponse {
        // Asset names are plain: a path that needed decoding (an encoded dot, slash
        // or NUL) is not one of them, whatever it decodes to.
        guard request.rawPath == request.path else { return APIError.notFound.response }
        let name = String(request.path.dropFirst("/static/".count))
        return assets.response(for: request, name: name) ?? APIError.notFound.response
    }
}
