import Foundation

/// What a responder answers: a status, headers and either bytes or a live event stream.
public struct HTTPResponse: Sendable {
    public enum Body: Sendable {
        case bytes([UInt8])
        /// Keeps the connection open and writes whatever is sent to the stream.
        case eventStream(EventStream)
        /// The answer is computed elsewhere (e.g. password hashing on another queue); the
        /// connection is suspended meanwhile, holding no worker thread.
        case deferred(DeferredResponse)
    }

    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: Body

    public init(status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders(), body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: HTTPStatus, contentType: String, body: [UInt8], headers: HTTPHeaders = HTTPHeaders()) {
        var headers = headers
        headers.set("Content-Type", contentType)
        self.init(status: status, headers: headers, body: .bytes(body))
    }

    public static func text(_ text: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    public static func html(_ html: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/html; charset=utf-8", body: Array(html.utf8))
    }

    public static func json(_ json: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: Array(json.utf8))
    }

    /// A `text/event-stream` response that stays open; events are written to `stream`.
    public static func eventStream(_ stream: EventStream, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = headers
        headers.set("Content-Type", "text/event-stream; charset=utf-8")
        headers.set("Cache-Control", "no-store")
        // Tells reverse proxies such as nginx not to buffer the stream.
        headers.set("X-Accel-Buffering", "no")
        return HTTPResponse(status: .ok, headers: headers, body: .eventStream(stream))
    }
}

extension HTTPResponse {
    /// A response that `work` delivers later, from any thread, by calling its argument once.
    public static func later(_ work: @escaping @Sendable (_ respond: @escaping @Sendable (HTTPResponse) -> Void) -> Void) -> HTTPResponse {
        HTTPResponse(status: .ok, body: .deferred(DeferredResponse(start: work)))
    }

    /// Hands this response to `respond`, starting its work first if it is itself deferred
    /// (deferred work whose answer may need more deferred work).
    public func deliver(to respond: @escaping @Sendable (HTTPResponse) -> Void) {
        if case .deferred(let work) = body { work.start(respond) } else { respond(self) }
    }
}

/// Work that produces a response later. See `HTTPResponse.later`.
public struct DeferredResponse: Sendable {
    /// Starts the work; it calls `respond` once, from any thread.
    public let start: @Sendable (_ respond: @escaping @Sendable (HTTPResponse) -> Void) -> Void
}

/// Answers requests. Called on libmicrohttpd's worker threads, so it must be quick and
/// thread-safe: hand slow work to other queues and answer with an event stream or later.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest) -> HTTPResponse

    /// The answer to a request refused before routing (see `HTTPProtocolError`). The
    /// default is a JSON `{"error", "message"}` body; the server adds `Connection: close`.
    func respond(to error: HTTPProtocolError, request: HTTPRequest) -> HTTPResponse
}

extension HTTPResponder {
    public func respond(to error: HTTPProtocolError, request: HTTPRequest) -> HTTPResponse {
        // The message may quote what the client sent, so it is encoded, never spliced.
        let body = (try? JSONSerialization.data(
            withJSONObject: ["error": error.code, "message": error.message], options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return HTTPResponse(status: error.status, contentType: "application/json", body: [UInt8](body))
    }
}
