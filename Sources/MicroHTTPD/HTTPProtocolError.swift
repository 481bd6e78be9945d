import Foundation

/// A request the server refuses before any route sees it, because answering it as sent
/// would be unsafe or ambiguous (RFC 9112 §6). The connection is closed after the answer.
public enum HTTPProtocolError: Error, Equatable, Sendable {
    /// HTTP/1.1 requires a Host header (RFC 9112 §3.2).
    case missingHost
    /// Both Transfer-Encoding and Content-Length: the body's end is ambiguous, the classic
    /// request-smuggling set-up behind a proxy (RFC 9112 §6.1).
    case conflictingBodyLength
    /// A transfer coding other than chunked, which this server cannot decode.
    case unsupportedTransferEncoding(String)
    /// The server is stopping and takes no new work.
    case shuttingDown

    public var status: HTTPStatus {
        switch self {
        case .missingHost, .conflictingBodyLength: return .badRequest
        case .unsupportedTransferEncoding: return .notImplemented
        case .shuttingDown: return .serviceUnavailable
        }
    }

    /// A stable machine-readable code.
    public var code: String {
        switch self {
        case .missingHost: return "missing_host"
        case .conflictingBodyLength: return "conflicting_body_length"
        case .unsupportedTransferEncoding: return "unsupported_transfer_encoding"
        case .shuttingDown: return "shutting_down"
        }
    }

    public var message: String {
        switch self {
        case .missingHost:
            return "HTTP/1.1 requests must carry a Host header."
        case .conflictingBodyLength:
            return "Send either Transfer-Encoding or Content-Length, not both."
        case .unsupportedTransferEncoding(let coding):
            return "The transfer coding '\(coding)' is not supported; send the body as it is or chunked."
        case .shuttingDown:
            return "The server is restarting. Please try again in a few seconds."
        }
    }

    /// The error a request's headers show, if any.
    static func check(version: String, headers: HTTPHeaders) -> HTTPProtocolError? {
        if version == "HTTP/1.1", headers["Host"] == nil { return .missingHost }
        if let coding = headers["Transfer-Encoding"] {
            if headers["Content-Length"] != nil { return .conflictingBodyLength }
            let normalised = coding.asciiTrimmedLowercased
            if normalised != "chunked" { return .unsupportedTransferEncoding(coding) }
        }
        return nil
    }
}
