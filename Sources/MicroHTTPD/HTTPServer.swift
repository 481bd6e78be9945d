import CMicroHTTPD
import Dispatch
import Foundation
import MicroHTTPDShims

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
        var heartbeat: DispatchSourceTimer?
        var openStreams: [ObjectIdentifier: EventStream] = [:]
        /// Connections suspended while a deferred response is computed.
        var pendingDeferred = 0
        var isStopping = false

        var isDrained: Bool { openStreams.isEmpty && pendingDeferred == 0 }
    }

    private let state = Locked(State())
    private let drained = DispatchSemaphore(value: 0)

    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder) {
        self.configuration = configuration
        self.responder = responder
    }

    /// The port the server listens on; meaningful after `start()`.
    public var port: UInt16 { state.withLock { $0.port } }

    /// Event streams currently open.
    public var openStreamCount: Int { state.withLock { $0.openStreams.count } }

    public func start() throws {
        _ = mhd_shim_raise_open_file_limit()
        var errorBuffer = [CChar](repeating: 0, count: 256)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let daemon: OpaquePointer? = configuration.host.withCString { host in
            var config = mhd_shim_daemon_config(
                host: host,
                port: configuration.port,
                thread_pool_size: UInt32(max(1, configuration.workerThreads)),
                connection_limit: UInt32(configuration.connectionLimit),
                connection_timeout: UInt32(configuration.idleTimeoutSeconds),
                connection_memory_limit: 0,
                access_handler: HTTPServer.accessHandler,
                access_handler_cls: context,
                completed_handler: HTTPServer.requestCompleted,
                completed_handler_cls: context
            )
            return mhd_shim_start_daemon(&config, &errorBuffer, errorBuffer.count)
        }
        guard let daemon else {
            let reason = errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            throw StartError.cannotStart(String(decoding: reason, as: UTF8.self))
        }
        let port = mhd_shim_bound_port(daemon)
        let heartbeat = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        let interval = configuration.heartbeatIntervalSeconds
        heartbeat.schedule(deadline: .now() + interval, repeating: interval, leeway: .seconds(1))
        heartbeat.setEventHandler { [weak self] in self?.sendHeartbeats() }
        heartbeat.resume()
        state.withLock {
            $0.daemon = daemon
            $0.port = port
            $0.heartbeat = heartbeat
        }
    }

    /// Closes every event stream, lets libmicrohttpd finish them, then stops the daemon.
    /// (Stopping with suspended connections is not allowed by libmicrohttpd.)
    public func stop() {
        let (daemon, streams, isDrained) = state.withLock { state -> (OpaquePointer?, [EventStream], Bool) in
            state.isStopping = true
            state.heartbeat?.cancel()
            state.heartbeat = nil
            defer { state.daemon = nil }
            return (state.daemon, Array(state.openStreams.values), state.isDrained)
        }
        guard let daemon else { return }
        for stream in streams { stream.close() }
        if !isDrained {
            _ = drained.wait(timeout: .now() + 5)
        }
        MHD_stop_daemon(daemon)
    }

    private func sendHeartbeats() {
        let streams = state.withLock { Array($0.openStreams.values) }
        for stream in streams { stream.sendComment("ping") }
    }

    private func register(_ stream: EventStream) -> Bool {
        state.withLock { state in
            guard !state.isStopping else { return false }
            state.openStreams[ObjectIdentifier(stream)] = stream
            return true
        }
    }

    private func unregister(_ stream: EventStream) {
        let isDrained = state.withLock { state -> Bool in
            state.openStreams[ObjectIdentifier(stream)] = nil
            return state.isStopping && state.isDrained
        }
        if isDrained { drained.signal() }
    }

    /// Suspends the connection and starts the deferred work; when it delivers, the
    /// connection is resumed and libmicrohttpd calls the access handler again, which then
    /// queues the response (see `accessHandler`).
    private func startDeferred(_ deferred: DeferredResponse, context: RequestContext, connection: OpaquePointer) -> MHD_Result {
        let accepted = state.withLock { state -> Bool in
            guard !state.isStopping else { return false }
            state.pendingDeferred += 1
            return true
        }
        guard accepted else {
            return queue(.text("The server is shutting down.", status: .serviceUnavailable), on: connection)
        }
        context.isAwaitingDeferredResponse = true
        context.wasDeferred = true
        MHD_suspend_connection(connection)
        // The connection cannot go away while suspended, so the pointer stays valid.
        nonisolated(unsafe) let connection = connection
        let once = Locked(false)
        let slot = context.deferredResponse
        deferred.start { response in
            guard once.withLock({ delivered in defer { delivered = true }; return !delivered }) else { return }
            slot.withLock { $0 = response }
            MHD_resume_connection(connection)
        }
        return MHD_Result.YES
    }

    // MARK: Answering

    private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let mhdResponse: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            mhdResponse = bytes.withUnsafeBytes { buffer in
                MHD_create_response_from_buffer(
                    buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress),
                    MHD_ResponseMemoryMode.RESPMEM_MUST_COPY)
            }
        case .deferred:
            // Only `answer` starts deferred work; a deferred result cannot itself be deferred.
            return queue(.text("Internal error: nested deferred response.", status: .internalServerError), on: connection)
        case .eventStream(let stream):
            guard register(stream) else {
                stream.terminate()
                return queue(.text("The server is shutting down.", status: .serviceUnavailable), on: connection)
            }
            stream.attach(to: connection)
            stream.onTermination { [weak self] in self?.unregister(stream) }
            mhdResponse = MHD_create_response_from_callback(
                UInt64.max, 4096, HTTPServer.readEventStream,
                Unmanaged.passRetained(stream).toOpaque(), HTTPServer.releaseEventStream)
        }
        guard let mhdResponse else { return MHD_Result.NO }
        for (name, value) in response.headers {
            _ = MHD_add_response_header(mhdResponse, name, value)
        }
        let result = MHD_queue_response(connection, UInt32(response.status.code), mhdResponse)
        MHD_destroy_response(mhdResponse)
        return result
    }

    /// The final call for a request: a deferred response that has arrived, or the responder's.
    private func answer(_ context: RequestContext, on connection: OpaquePointer) -> MHD_Result {
        if context.isAwaitingDeferredResponse {
            guard let response = context.deferredResponse.withLock({ $0 }) else { return MHD_Result.YES }
            context.isAwaitingDeferredResponse = false
            return queue(response, on: connection)
        }
        let response = responder.respond(to: context.request)
        if case .deferred(let deferred) = response.body {
            return startDeferred(deferred, context: context, connection: connection)
        }
        return queue(response, on: connection)
    }

    // MARK: libmicrohttpd callbacks (static: they run on libmicrohttpd's threads)

    private static let accessHandler: MHD_AccessHandlerCallback = {
        cls, connection, url, method, _, uploadData, uploadDataSize, requestContext in
        guard let cls, let connection, let requestContext, let uploadDataSize else { return MHD_Result.NO }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
        let maxBodyBytes = server.configuration.maxBodyBytes

        guard let existing = requestContext.pointee else {
            // First call: headers only.
            let context = RequestContext(
                connection: connection,
                method: method.map { String(cString: $0) } ?? "GET",
                path: url.map { String(cString: $0) } ?? "/",
                maxBodyBytes: maxBodyBytes)
            requestContext.pointee = Unmanaged.passRetained(context).toOpaque()
            if context.bodyExceededLimit {
                // Declared too large: answer now, without reading the body at all.
                return server.answer(context, on: connection)
            }
            return MHD_Result.YES
        }
        let context = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()
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

    private static let requestCompleted: MHD_RequestCompletedCallback = { cls, _, requestContext, _ in
        guard let cls, let requestContext, let pointer = requestContext.pointee else { return }
        let context = Unmanaged<RequestContext>.fromOpaque(pointer).takeRetainedValue()
        requestContext.pointee = nil
        if context.wasDeferred {
            Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().deferredRequestFinished()
        }
    }

    /// A deferred request is over (its response sent, or the client gone): stopping may go on.
    private func deferredRequestFinished() {
        let isDrained = state.withLock { state -> Bool in
            state.pendingDeferred -= 1
            return state.isStopping && state.isDrained
        }
        if isDrained { drained.signal() }
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
