import CMicroHTTPD
import Clocks
import Dispatch
import Foundation
import MicroHTTPDShims
import Locking

/// An HTTP/1.1 server on libmicrohttpd: epoll worker threads, suspend/resume for event
/// streams, bodies read whole up to a limit, every request answered by one `HTTPResponder`.
public final class HTTPServer: Sendable {
    public enum StartError: Error, CustomStringConvertible {
        case cannotStart(String)
        public var description: String {
            switch self {
            case .cannotStart(let reason): return reason
            }
        }
    }

    public let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder

    private struct State {
        var daemon: OpaquePointer?
        var port: UInt16 = 0
        var openStreams = OpenStreams()
        /// Connections suspended while a deferred response is computed.
        var pendingDeferred: [ObjectIdentifier: PendingDeferred] = [:]
        var isStopping = false
        var hasStoppedListening = false

        var isDrained: Bool { openStreams.isEmpty && pendingDeferred.isEmpty }
    }

    private let state = Locked(State())
    /// Every connection's hang-up, noticed at once (nil if the kernel refused an epoll set).
    private let hangUps = HangUpWatcher()
    /// libmicrohttpd's error messages, collected while starting so a failure can say why.
    private let startMessages = Locked<[String]>([])

    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder) {
        self.configuration = configuration
        self.responder = responder
    }

    /// The port the server listens on; meaningful after `start()`.
    public var port: UInt16 { state.withLock { $0.port } }

    /// Event streams currently open.
    public var openStreamCount: Int { state.withLock { $0.openStreams.count } }

    /// Requests waiting for a deferred response (e.g. a password being hashed).
    public var pendingDeferredCount: Int { state.withLock { $0.pendingDeferred.count } }

    public func start() throws {
        _ = mhd_shim_raise_open_file_limit()
        hangUps?.start()
        var errorBuffer = [CChar](repeating: 0, count: 256)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let daemon: OpaquePointer? = configuration.host.withCString { host in
            var config = mhd_shim_daemon_config(
                host: host,
                port: configuration.port,
                thread_pool_size: UInt32(max(1, configuration.workerThreads)),
                connection_limit: UInt32(configuration.connectionLimit),
                per_ip_connection_limit: UInt32(max(0, configuration.perAddressConnectionLimit)),
                connection_timeout: UInt32(configuration.idleTimeoutSeconds),
                connection_memory_limit: max(0, configuration.connectionMemoryBytes),
                access_handler: HTTPServer.accessHandler,
                access_handler_cls: context,
                connection_handler: hangUps == nil ? nil : HTTPServer.connectionChanged,
                connection_handler_cls: context,
                completed_handler: HTTPServer.requestCompleted,
                completed_handler_cls: context,
                uri_callback: HTTPServer.requestLineReceived,
                uri_callback_cls: context,
                error_log: HTTPServer.libraryMessage,
                error_log_cls: context
            )
            return mhd_shim_start_daemon(&config, &errorBuffer, errorBuffer.count)
        }
        guard let daemon else {
            // Nothing to watch: its thread and descriptors go now, not with the process.
            hangUps?.stop()
            // libmicrohttpd's own words ("Failed to bind to port 8080: Address already in
            // use") are better than our guess; fall back to the guess without them.
            let messages = startMessages.withLock { $0 }
            let reason = messages.isEmpty
                ? String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                : messages.joined(separator: "; ")
            throw StartError.cannotStart(reason)
        }
        let port = mhd_shim_bound_port(daemon)
        state.withLock {
            $0.daemon = daemon
            $0.port = port
        }
        // Until a shutdown begins (or the server is gone).
        configuration.clock.every(configuration.heartbeatIntervalSeconds) { [weak self] in
            guard let self, !state.withLock({ $0.isStopping }) else { return false }
            sendHeartbeats()
            return true
        }
    }

    /// Stops taking work: the listening socket closes, every event stream ends, and requests
    /// on open connections that would need deferred work or a stream get 503. Deferred work
    /// already started goes on.
    public func beginShutdown() {
        let (daemon, streams) = state.withLock { state -> (OpaquePointer?, [EventStream]) in
            state.isStopping = true
            defer { state.hasStoppedListening = true }
            return (state.hasStoppedListening ? nil : state.daemon, state.openStreams.list)
        }
        // Not MHD_quiesce_daemon: it can abort the process when a worker is busy (the shim
        // explains). New connections are refused from here on.
        if let daemon { _ = mhd_shim_stop_listening(daemon) }
        for stream in streams { stream.close() }
    }

    /// Waits up to `grace` seconds for deferred responses to finish, answers the rest with
    /// the responder's shutdown error, waits for every suspended connection to be resumed
    /// and released, then stops the daemon. (libmicrohttpd aborts the process if stopped
    /// with a suspended connection.) Returns false if something could not be released; the
    /// daemon is then left running rather than crash, and the process should exit.
    @discardableResult
    public func finishShutdown(grace: TimeInterval) -> Bool {
        beginShutdown()
        let daemon = state.withLock { $0.daemon }
        guard let daemon else { return true }
        if !waitUntilDrained(timeout: grace) {
            let unfinished = state.withLock { Array($0.pendingDeferred.values) }
            for pending in unfinished {
                pending.deliver(shutdownResponse(for: pending.request))
            }
            // Streams that were between reads when closed are resumed by now; give
            // libmicrohttpd a moment to write the last answers and release them.
            guard waitUntilDrained(timeout: 5) else { return false }
        }
        state.withLock { $0.daemon = nil }
        MHD_stop_daemon(daemon)
        hangUps?.stop()
        return true
    }

    /// Shutdown in one call (`finishShutdown` begins it if nobody has).
    @discardableResult
    public func stop(grace: TimeInterval = 5) -> Bool {
        finishShutdown(grace: grace)
    }

    private func waitUntilDrained(timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !state.withLock({ $0.isDrained }) {
            if Date() >= deadline { return false }
            usleep(5_000)
        }
        return true
    }

    private func shutdownResponse(for request: HTTPRequest) -> HTTPResponse {
        var response = responder.respond(to: .shuttingDown, request: request)
        response.headers.set("Connection", "close")
        response.headers.set("Retry-After", "5")
        return response
    }

    /// The periodic heartbeat, now (tests; the clock calls the same).
    public func sendHeartbeatsNow() { sendHeartbeats() }

    /// Each open stream gets a comment line, and streams whose client has hung up are
    /// closed at once instead of waiting for a write to fail (which can take two beats).
    private func sendHeartbeats() {
        // The list as it is: a copy-on-write array, so taking it copies and retains nothing.
        let streams = state.withLock { $0.openStreams.list }
        // Without the hang-up watcher, a poll per stream is how a dead client is noticed
        // before a write fails; with it, the watcher has closed those streams already (and a
        // direct write to a reset connection fails at once), and the poll was a tenth of an
        // idle round's CPU.
        let pollEachStream = hangUps == nil
        let ping = EventStream.commentBytes("ping")
        for stream in streams {
            if pollEachStream, stream.closeIfPeerHasGone() { continue }
            stream.send(commentBytes: ping)
        }
    }

    private func register(_ stream: EventStream) -> Bool {
        state.withLock { state in
            guard !state.isStopping else { return false }
            state.openStreams.insert(stream)
            return true
        }
    }

    private func unregister(_ stream: EventStream) {
        state.withLock { state in
            state.openStreams.remove(stream)
        }
    }

    /// Suspends the connection and starts the deferred work; when it delivers, the
    /// connection is resumed and libmicrohttpd calls the access handler again, which then
    /// queues the response (see `accessHandler`).
    private func startDeferred(_ deferred: DeferredResponse, context: IncomingRequest, connection: OpaquePointer) -> MHD_Result {
        let pending = PendingDeferred(connection: connection, request: context.requestWithoutBody)
        let accepted = state.withLock { state -> Bool in
            guard !state.isStopping else { return false }
            state.pendingDeferred[ObjectIdentifier(pending)] = pending
            return true
        }
        guard accepted else {
            return queue(shutdownResponse(for: context.request), for: context, on: connection)
        }
        context.isAwaitingDeferredResponse = true
        context.pendingDeferred = pending
        MHD_suspend_connection(connection)
        deferred.start { response in pending.deliver(response) }
        return MHD_Result.YES
    }

    // MARK: Answering

    private func queue(_ response: HTTPResponse, for context: IncomingRequest, on connection: OpaquePointer) -> MHD_Result {
        let mhdResponse: OpaquePointer?
        var response = response
        if context.method == HTTPMethod.head.rawValue, case .eventStream(let stream) = response.body {
            // HEAD gets the stream's headers and no body at all (not even an empty chunk).
            stream.terminate()
            response.body = .bytes([])
        }
        switch response.body {
        case .bytes(let bytes):
            mhdResponse = bytes.withUnsafeBytes { buffer in
                MHD_create_response_from_buffer(
                    buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress),
                    MHD_ResponseMemoryMode.RESPMEM_MUST_COPY)
            }
        case .deferred:
            // Only `answer` starts deferred work; a deferred result cannot itself be deferred.
            return queue(.text("Internal error: nested deferred response.", status: .internalServerError),
                         for: context, on: connection)
        case .eventStream(let stream):
            guard register(stream) else {
                stream.terminate()
                return queue(shutdownResponse(for: context.request), for: context, on: connection)
            }
            let token = mhd_shim_connection_socket_context(connection).map { UInt64(UInt(bitPattern: $0)) }
            // libmicrohttpd sends an HTTP/1.1 client's stream in chunks (and an HTTP/1.0
            // client's unframed, to the connection's end): only the first is written directly,
            // and only with a watcher to wait for a slow reader with.
            let direct = context.version == "HTTP/1.1"
                ? hangUps.flatMap { watcher in token.map { EventStream.DirectWrites(watcher: watcher, token: $0) } }
                : nil
            stream.attach(to: connection, socket: mhd_shim_connection_fd(connection), direct: direct)
            stream.onTermination { [weak self] stream in self?.unregister(stream) }
            if let hangUps, let token {
                hangUps.watch(stream, connection: token)
            }
            mhdResponse = MHD_create_response_from_callback(
                UInt64.max, 1024, HTTPServer.readEventStream,
                Unmanaged.passRetained(stream).toOpaque(), HTTPServer.releaseEventStream)
        }
        guard let mhdResponse else { return MHD_Result.NO }
        for (name, value) in response.headers {
            // `withCString` lends a native string's own bytes; passing the strings as they
            // are made a C copy of each (`utf8CString`), two allocations per header.
            _ = name.withCString { name in value.withCString { MHD_add_response_header(mhdResponse, name, $0) } }
        }
        let result = MHD_queue_response(connection, UInt32(response.status.code), mhdResponse)
        MHD_destroy_response(mhdResponse)
        return result
    }

    /// The final call for a request: a deferred response that has arrived, or the responder's.
    private func answer(_ context: IncomingRequest, on connection: OpaquePointer) -> MHD_Result {
        if context.isAwaitingDeferredResponse {
            guard let response = context.pendingDeferred?.response else { return MHD_Result.YES }
            context.isAwaitingDeferredResponse = false
            return queue(response, for: context, on: connection)
        }
        // While stopping, quick answers are still given (a readiness probe says why it is
        // not ready); only work that would outlive the shutdown is refused: a deferred
        // answer (`startDeferred`) or a new event stream (`register`).
        let response = responder.respond(to: context.request)
        if case .deferred(let deferred) = response.body {
            return startDeferred(deferred, context: context, connection: connection)
        }
        return queue(response, for: context, on: connection)
    }

    /// Answers a request whose headers make it unsafe to read on, and closes the connection.
    private func refuse(_ error: HTTPProtocolError, context: IncomingRequest, on connection: OpaquePointer) -> MHD_Result {
        var response = responder.respond(to: error, request: context.request)
        response.headers.set("Connection", "close")
        return queue(response, for: context, on: connection)
    }

    // MARK: libmicrohttpd callbacks (static: they run on libmicrohttpd's threads)

    /// The request line has arrived: the context starts here, with the target as sent.
    private static let requestLineReceived: mhd_shim_uri_callback = { _, uri, _ in
        let context = IncomingRequest(rawTarget: uri.map { String(cString: $0) } ?? "/")
        return Unmanaged.passRetained(context).toOpaque()
    }

    private static let accessHandler: MHD_AccessHandlerCallback = {
        cls, connection, _, method, version, uploadData, uploadDataSize, requestContext in
        guard let cls, let connection, let requestContext, let uploadDataSize else { return MHD_Result.NO }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        let maxBodyBytes = server.configuration.maxBodyBytes

        if requestContext.pointee == nil {
            // Not expected (the request-line callback always runs first), but never crash.
            requestContext.pointee = Unmanaged.passRetained(IncomingRequest(rawTarget: "/")).toOpaque()
        }
        let context = Unmanaged<IncomingRequest>.fromOpaque(requestContext.pointee!).takeUnretainedValue()
        if !context.hasHeaders {
            // First call: headers only.
            context.readHeaders(
                connection: connection,
                method: method.map { String(cString: $0) } ?? "GET",
                version: version.map { String(cString: $0) } ?? "HTTP/1.1",
                maxBodyBytes: maxBodyBytes)
            if let error = HTTPProtocolError.check(version: context.version, headers: context.headers) {
                return server.refuse(error, context: context, on: connection)
            }
            if context.bodyExceededLimit {
                // Declared too large: answer now, without reading the body at all.
                return server.answer(context, on: connection)
            }
            return MHD_Result.YES
        }
        if uploadDataSize.pointee > 0 {
            if let uploadData {
                context.append(UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee),
                               maxBodyBytes: maxBodyBytes)
            }
            uploadDataSize.pointee = 0
            return MHD_Result.YES
        }
        return server.answer(context, on: connection)
    }

    /// A connection starts (its hang-up is watched from now) or is about to close.
    private static let connectionChanged: MHD_NotifyConnectionCallback = { cls, connection, socketContext, change in
        guard let cls, let connection, let socketContext,
              let hangUps = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().hangUps else { return }
        if change == .CONNECTION_NOTIFY_STARTED {
            let token = hangUps.connectionOpened(socket: mhd_shim_connection_fd(connection))
            socketContext.pointee = UnsafeMutableRawPointer(bitPattern: UInt(token))
        } else if let token = socketContext.pointee {
            hangUps.connectionClosed(UInt64(UInt(bitPattern: token)))
        }
    }

    private static let requestCompleted: MHD_RequestCompletedCallback = { cls, _, requestContext, _ in
        guard let cls, let requestContext, let pointer = requestContext.pointee else { return }
        let context = Unmanaged<IncomingRequest>.fromOpaque(pointer).takeRetainedValue()
        requestContext.pointee = nil
        if let pending = context.pendingDeferred {
            Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().deferredRequestFinished(pending)
        }
    }

    /// A deferred request is over (its response sent, or the client gone).
    private func deferredRequestFinished(_ pending: PendingDeferred) {
        state.withLock { state in
            state.pendingDeferred[ObjectIdentifier(pending)] = nil
        }
    }

    private static let libraryMessage: mhd_shim_message_callback = { cls, text in
        guard let cls, let text else { return }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        let message = String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
        if server.state.withLock({ $0.daemon == nil && !$0.isStopping }) {
            server.startMessages.withLock { $0.append(message) }
        }
        server.configuration.errorLog?(LibraryMessage(message))
    }

    private static let readEventStream: MHD_ContentReaderCallback = { cls, _, buffer, capacity in
        guard let cls, let buffer else { return Int(MHD_CONTENT_READER_END_WITH_ERROR) }
        let stream = Unmanaged<EventStream>.fromOpaque(cls).takeUnretainedValue()
        return stream.read(into: buffer, capacity: capacity)
    }

    private static let releaseEventStream: MHD_ContentReaderFreeCallback = { cls in
        guard let cls else { return }
        let stream = Unmanaged<EventStream>.fromOpaque(cls).takeRetainedValue()
        stream.terminate()
    }
}

/// The open event streams, as a list the heartbeat takes as it is and an index that makes
/// removing one O(1). Why a list: the heartbeat had made an array of a dictionary's values
/// each round, retaining every stream and releasing them all again when the array went, a
/// tenth of an idle round's CPU at 19,000 streams (issue 24).
struct OpenStreams {
    /// In no particular order.
    private(set) var list: [EventStream] = []
    /// Where each stream is in `list`.
    private var positions: [ObjectIdentifier: Int] = [:]

    var count: Int { list.count }
    var isEmpty: Bool { list.isEmpty }

    mutating func insert(_ stream: EventStream) {
        let key = ObjectIdentifier(stream)
        guard positions[key] == nil else { return }
        positions[key] = list.count
        list.append(stream)
    }

    /// Moves the last stream into the removed one's place.
    mutating func remove(_ stream: EventStream) {
        guard let position = positions.removeValue(forKey: ObjectIdentifier(stream)) else { return }
        let last = list.removeLast()
        guard position < list.count else { return }
        list[position] = last
        positions[ObjectIdentifier(last)] = position
    }
}
