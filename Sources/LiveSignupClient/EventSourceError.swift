import Foundation

/// Why an `EventSourceConnection` gave up. Per the spec these "fail the connection": no
/// reconnect follows, the events stream finishes with this error.
public enum EventSourceError: Error, Equatable, Sendable, CustomStringConvertible, LocalizedError {
    /// The server answered with a status other than 200. `body` holds up to 64 KiB of the
    /// answer so callers can decode a JSON error (the sign-up server's 404 for a bad token).
    case badStatus(Int, body: Data)
    /// A 200 answer whose Content-Type (shown here as received) is not `text/event-stream`.
    case unexpectedContentType(String?)
    /// The answer was not HTTP at all.
    case notHTTP
    /// `maximumReconnectAttempts` consecutive attempts failed before a stream was opened.
    case gaveUp(attempts: Int, lastError: String)

    public var description: String {
        switch self {
        case .badStatus(let status, let body):
            let text = String(decoding: body.prefix(300), as: UTF8.self)
            return "The event stream answered HTTP \(status)" + (text.isEmpty ? "" : ": \(text)")
        case .unexpectedContentType(let contentType):
            return "The event stream answered with Content-Type \(contentType ?? "(none)"), not text/event-stream"
        case .notHTTP:
            return "The event stream answer was not an HTTP response"
        case .gaveUp(let attempts, let lastError):
            return "Gave up connecting to the event stream after \(attempts) attempts: \(lastError)"
        }
    }

    public var errorDescription: String? { description }
}
