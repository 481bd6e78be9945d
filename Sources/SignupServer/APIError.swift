import MicroHTTPD

/// A JSON error answer: `{"error": "<code>", "message": "<readable sentence>"}`.
struct APIError: Error, Equatable {
    let status: HTTPStatus
    let code: String
    let message: String

    var response: HTTPResponse {
        struct Body: Encodable {
            let error: String
            let message: String
        }
        var response = HTTPResponse.json(FormEventEncoder.json(Body(error: code, message: message)), status: status)
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    static func missingParameter(_ name: String) -> APIError {
        APIError(status: .badRequest, code: "missing_parameter", message: "The '\(name)' parameter is required.")
    }

    static let unknownSession = APIError(
        status: .notFound, code: "unknown_session",
        message: "This form session is unknown or has expired. Reload the page to start a new one.")

    static func bodyTooLarge(limit: Int) -> APIError {
        let size = limit % 1024 == 0 ? "\(limit / 1024) KiB" : "\(limit) bytes"
        return APIError(status: .contentTooLarge, code: "body_too_large",
                        message: "The request body is larger than \(size).")
    }

    static let notFound = APIError(status: .notFound, code: "not_found", message: "There is nothing at this address.")
}
