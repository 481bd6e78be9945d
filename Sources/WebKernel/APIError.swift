import FormWire
import MicroHTTPD

/// A JSON error answer: `{"error": "<code>", "message": "<readable sentence>"}`.
package struct APIError: Error, Equatable {
    package let status: HTTPStatus
    package let code: String
    package let message: String
    /// For 429: which limit, and whole seconds until a retry can succeed (also `Retry-After`).
    package var limit: String? = nil
    package var retryAfter: Int? = nil
    /// For a refused proof of work: why.
    package var reason: String? = nil

    package init(status: HTTPStatus, code: String, message: String, limit: String? = nil, retryAfter: Int? = nil,
                 reason: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.limit = limit
        self.retryAfter = retryAfter
        self.reason = reason
    }

    package var response: HTTPResponse {
        var response = HTTPResponse.json(
            WireJSON.encode(ErrorBody(error: code, message: message, limit: limit, retryAfter: retryAfter, reason: reason)),
            status: status)
        response.headers.add("Cache-Control", "no-store")
        if let retryAfter { response.headers.add("Retry-After", String(retryAfter)) }
        return response
    }

    /// 429: `limit` is exceeded.
    package static func rateLimited(_ exceeded: LimitExceeded) -> APIError {
        APIError(status: .tooManyRequests, code: "rate_limited",
                 message: "Too many requests from your network. Please wait \(Self.wait(exceeded.retryAfterSeconds)) and try again.",
                 limit: exceeded.limit.rawValue, retryAfter: exceeded.retryAfterSeconds)
    }

    package static let crossSite = APIError(
        status: .forbidden, code: "cross_site_request",
        message: "This request came from another website, so it was refused. Open the sign-up page on this site and try again.")

    /// "5 seconds", "a minute", "3 minutes".
    package static func wait(_ seconds: Int) -> String {
        if seconds <= 1 { return "a second" }
        if seconds < 60 { return "\(seconds) seconds" }
        let minutes = (seconds + 59) / 60
        return minutes == 1 ? "a minute" : "\(minutes) minutes"
    }

    package static func missingParameter(_ name: String) -> APIError {
        APIError(status: .badRequest, code: "missing_parameter", message: "The '\(name)' parameter is required.")
    }

    package static let unknownSession = APIError(
        status: .notFound, code: "unknown_session",
        message: "This form session is unknown or has expired. Reload the page to start a new one.")

    package static func bodyTooLarge(limit: Int) -> APIError {
        let size = limit % 1024 == 0 ? "\(limit / 1024) KiB" : "\(limit) bytes"
        return APIError(status: .contentTooLarge, code: "body_too_large",
                        message: "The request body is larger than \(size).")
    }

    package static let notFound = APIError(status: .notFound, code: "not_found", message: "There is nothing at this address.")
}

/// The part of a flow that serves a route, or `APIError.notFound` when this server does not
/// offer the flow (recovery and address proofs without mail): the router answers it as for a
/// path nothing serves, a page in the visitor's language for a browser, JSON for a program.
package func offered<Part>(_ part: Part?) throws(APIError) -> Part {
    guard let part else { throw .notFound }
    return part
}
