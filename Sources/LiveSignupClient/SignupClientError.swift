import Foundation

/// Failures of `SignupClient` and `FormSession` calls.
public enum SignupClientError: Error, Equatable, Sendable, CustomStringConvertible, LocalizedError {
    /// A non-2xx answer. `code` and `message` come from the protocol's JSON error body
    /// `{"error":…,"message":…}`; for a body that is not that JSON, `code` is nil and `message`
    /// holds the start of the body text (nil when empty), which still helps diagnose.
    case http(status: Int, code: String?, message: String?)
    /// The `POST /sessions` answer had no `token`.
    case missingToken
    /// A 2xx answer this client cannot read (e.g. a `/fields` answer without a rev).
    case invalidResponse(String)

    public var description: String {
        switch self {
        case .http(let status, let code, let message):
            var text = "HTTP \(status)"
            if let code { text += " \(code)" }
            if let message { text += ": \(message)" }
            return text
        case .missingToken:
            return "The server's answer to POST /sessions has no token"
        case .invalidResponse(let reason):
            return "Unexpected response: \(reason)"
        }
    }

    public var errorDescription: String? { description }

    /// Builds `.http` from a status and the answer body.
    public static func http(status: Int, body: Data) -> SignupClientError {
        if let decoded = try? JSONDecoder().decode(ErrorBody.self, from: body) {
            return .http(status: status, code: decoded.error, message: decoded.message)
        }
        let text = String(decoding: body.prefix(500), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return .http(status: status, code: nil, message: text.isEmpty ? nil : text)
    }
}
