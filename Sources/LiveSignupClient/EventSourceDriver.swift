import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
import Locking
#endif

/// The URLSession side of `EventSourceConnection`: owns the session, receives its delegate
/// callbacks, feeds the parser and runs the reconnect loop.
///
/// A data delegate rather than `bytes(for:)` because the latter does not exist in
/// FoundationNetworking on Linux, while `didReceive data` is delivered incrementally there.
///
/// `@unchecked Sendable`: an `NSObject` subclass cannot be checked by the compiler, and
/// URLSession requires its delegate to be `Sendable`. All mutable state lives in `state` and is
/// only touched under its lock; every other stored property is an immutable `Sendable` value.
final class EventSourceDriver: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let stream: AsyncThrowingStream<ServerSentEvent, Error>
    private let continuation: AsyncThrowingStream<ServerSentEvent, Error>.Continuation
    private let url: URL
    private let headers: [String: String]
    private let maximumReconnectionTime: Int?
    private let maximumReconnectAttempts: Int?
    private let state: Locked<State>

    /// Cap on the error body kept from a non-200 answer; enough for any JSON error.
    private static let maximumErrorBodySize = 64 * 1024

    private enum ResponseState {
        /// Request sent, no headers yet.
        case awaitingResponse
        /// 200 + text/event-stream: body bytes go to the parser.
        case streaming
        /// Collecting the error body, then fail the connection.
        case badStatus(Int, body: Data)
        /// Fail the connection as soon as the task completes.
        case failed(EventSourceError)
    }

    private struct State {
        var configuration: URLSessionConfiguration
        // Created on start, so a connection that is never started holds no session (a
        // session retains its delegate until invalidated, which would leak otherwise).
        var session: URLSession?
        var task: URLSessionDataTask?
        var reconnectTask: Task<Void, Never>?
        var response = ResponseState.awaitingResponse
        var parser: ServerSentEventParser
        var lastEventID: String
        var reconnectionTime: Int
        var consecutiveFailures = 0
        var started = false
        var closed = false
    }

    init(
        url: URL,
        headers: [String: String],
        lastEventID: String,
        reconnectionTime: Int,
        maximumReconnectionTime: Int?,
        maximumReconnectAttempts: Int?,
        configuration: URLSessionConfiguration
    ) {
        self.url = url
        self.headers = headers
        self.maximumReconnectionTime = maximumReconnectionTime
        self.maximumReconnectAttempts = maximumReconnectAttempts
        let configuration = configuration.copy() as! URLSessionConfiguration
        // An event stream must never be answered from a cache.
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        state = Locked(State(
            configuration: configuration,
            parser: ServerSentEventParser(lastEventID: lastEventID),
            lastEventID: lastEventID,
            reconnectionTime: reconnectionTime
        ))
        (stream, continuation) = AsyncThrowingStream.makeStream(of: ServerSentEvent.self, throwing: Error.self)
        super.init()
        // A consumer that stops iterating (cancelled task, `break`) ends the connection too.
        // Weak: the continuation is owned by this object, a strong capture would be a cycle.
        continuation.onTermination = { [weak self] _ in
            self?.close()
        }
    }

    var lastEventID: String {
        state.withLock { $0.lastEventID }
    }

    var reconnectionTime: Int {
        state.withLock { $0.reconnectionTime }
    }

    /// Opens the first connection; later calls do nothing.
    func start() {
        let shouldStart = state.withLock { state in
            guard !state.started, !state.closed else { return false }
            state.started = true
            return true
        }
        if shouldStart {
            connect()
        }
    }

    func close() {
        let resources = state.withLock { state -> (URLSessionDataTask?, Task<Void, Never>?, URLSession?)? in
            guard !state.closed || state.session != nil else { return nil }
            state.closed = true
            defer {
                state.task = nil
                state.reconnectTask = nil
                state.session = nil
            }
            return (state.task, state.reconnectTask, state.session)
        }
        guard let (task, reconnectTask, session) = resources else { return }
        reconnectTask?.cancel()
        task?.cancel()
        // Invalidating releases the session's strong reference to this delegate.
        session?.invalidateAndCancel()
        continuation.finish()
    }

    private func connect() {
        let task = state.withLock { state -> URLSessionDataTask? in
            guard !state.closed else { return nil }
            var request = URLRequest(url: url)
            request.httpMethod = "GET"
            request.cachePolicy = .reloadIgnoringLocalCacheData
            for (name, value) in headers {
                request.setValue(value, forHTTPHeaderField: name)
            }
            request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
            request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
            if !state.lastEventID.isEmpty {
                request.setValue(state.lastEventID, forHTTPHeaderField: "Last-Event-ID")
            }
            let session = state.session ?? makeSession(configuration: state.configuration)
            state.session = session
            let task = session.dataTask(with: request)
            state.task = task
            state.reconnectTask = nil
            state.response = .awaitingResponse
            // Buffers of the previous body are discarded; the last event ID carries over.
            state.parser = ServerSentEventParser(lastEventID: state.lastEventID)
            return task
        }
        task?.resume()
    }

    private func makeSession(configuration: URLSessionConfiguration) -> URLSession {
        // A serial delegate queue keeps the response, data and completion callbacks in order,
        // so events are yielded in stream order.
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "LiveSignupClient.EventSource"
        return URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
    }

    // MARK: URLSessionDataDelegate

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let accept = state.withLock { state -> Bool in
            guard !state.closed, dataTask === state.task else { return false }
            guard let http = response as? HTTPURLResponse else {
                state.response = .failed(.notHTTP)
                return false
            }
            if http.statusCode != 200 {
                // Keep reading: the body explains the failure (e.g. unknown_session).
                state.response = .badStatus(http.statusCode, body: Data())
                return true
            }
            let contentType = http.value(forHTTPHeaderField: "Content-Type") ?? http.mimeType
            guard Self.isEventStream(contentType) else {
                state.response = .failed(.unexpectedContentType(contentType))
                return false
            }
            state.response = .streaming
            state.consecutiveFailures = 0
            return true
        }
        completionHandler(accept ? .allow : .cancel)
        if !accept {
            // FoundationNetworking ignores `.cancel` in the completion handler; cancel explicitly.
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let events = state.withLock { state -> [ServerSentEvent] in
            guard !state.closed, dataTask === state.task else { return [] }
            switch state.response {
            case .streaming:
                let events = state.parser.feed(data)
                state.lastEventID = state.parser.lastEventID
                if let retry = state.parser.reconnectionTime {
                    state.reconnectionTime = retry
                }
                return events
            case .badStatus(let status, var body):
                let room = Self.maximumErrorBodySize - body.count
                if room > 0 {
                    body.append(data.prefix(room))
                    state.response = .badStatus(status, body: body)
                }
                return []
            case .awaitingResponse, .failed:
                return []
            }
        }
        // Yielded outside the lock: the continuation may run consumer code synchronously.
        for event in events {
            continuation.yield(event)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        enum Next {
            case nothing
            case fail(EventSourceError)
            case reconnect
        }
        let next = state.withLock { state -> Next in
            guard !state.closed, task === state.task else { return .nothing }
            state.task = nil
            switch state.response {
            case .badStatus(let status, let body):
                state.closed = true
                return .fail(.badStatus(status, body: body))
            case .failed(let failure):
                state.closed = true
                return .fail(failure)
            case .streaming:
                // A stream that was open and ended: reconnect, as a browser would.
                break
            case .awaitingResponse:
                // Network error before any answer (refused, reset, timeout): the spec says
                // reconnect; a caller-set limit stops an endless loop against a dead server.
                state.consecutiveFailures += 1
                if let limit = maximumReconnectAttempts, state.consecutiveFailures > limit {
                    state.closed = true
                    return .fail(.gaveUp(
                        attempts: state.consecutiveFailures,
                        lastError: error.map { String(describing: $0) } ?? "connection closed"
                    ))
                }
            }
            var delay = state.reconnectionTime
            if let cap = maximumReconnectionTime {
                delay = min(delay, cap)
            }
            // Created under the lock so `close()` always sees (and cancels) it.
            state.reconnectTask = Task { [weak self] in
                try? await Task.sleep(nanoseconds: UInt64(max(0, delay)) * 1_000_000)
                guard !Task.isCancelled else { return }
                self?.connect()
            }
            return .reconnect
        }
        if case .fail(let failure) = next {
            let session = state.withLock { state -> URLSession? in
                defer { state.session = nil }
                return state.session
            }
            session?.finishTasksAndInvalidate()
            continuation.finish(throwing: failure)
        }
    }

    /// Compares the MIME type essence only, so `text/event-stream; charset=utf-8` is accepted.
    static func isEventStream(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let essence = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return essence.trimmingCharacters(in: .whitespaces).lowercased() == "text/event-stream"
    }
}
