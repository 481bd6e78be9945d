import Foundation
import Identity
import MicroHTTPD
import SignupDomain
import WebKernel

/// `/healthz` and `/readyz` for load balancers and orchestrators: cheap enough to probe every
/// second, no session, no limit.
struct HealthChecks: Sendable {
    let store: any AccountStore
    /// True once shutdown has begun.
    let isStopping: @Sendable () -> Bool

    /// The process serves requests.
    func liveness() -> HTTPResponse {
        Self.json(["status": "ok"], status: .ok)
    }

    /// The process should get traffic: the account store answers and it is not stopping.
    func readiness() -> HTTPResponse {
        if isStopping() {
            return Self.json(["status": "unavailable", "reason": "shutting_down",
                              "message": "The server is shutting down."], status: .serviceUnavailable)
        }
        do {
            try store.checkReadiness()
        } catch {
            return Self.json(["status": "unavailable", "reason": "account_store",
                              "message": "The account store does not answer: \(error)"], status: .serviceUnavailable)
        }
        return Self.json(["status": "ok"], status: .ok)
    }

    private static func json(_ body: [String: String], status: HTTPStatus) -> HTTPResponse {
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        var response = HTTPResponse(status: status, contentType: "application/json", body: [UInt8](data))
        response.headers.add("Cache-Control", "no-store")
        return response
    }
}
