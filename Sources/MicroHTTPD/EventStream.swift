import CMicroHTTPD
import MicroHTTPDShims
import Foundation
import Locking

/// One open `text/event-stream` response. Any thread may `send`.
///
/// While nothing is pending the connection is suspended, so an idle stream costs no CPU and
/// no thread. (Returning 0 from the content reader without suspending would make
/// libmicrohttpd poll the reader in a busy loop.) What is sent then goes one of two ways:
///
/// - **Straight to the socket**, from the sending thread, framed as the chunk libmicrohttpd
///   would have made of it. Resuming costs more than the bytes: libmicrohttpd 0.9.75 walks
///   its whole list of suspended connections on every loop that resumes one, so with
///   thousands of idle streams open each edit's event paid for all of them (12,000 idle
///   streams more than doubled an edit's CPU), and it wakes the daemon's thread for each.
///   While suspended the connection is ours: libmicrohttpd suspends it only from the content
///   reader, which it calls only when everything before is on the wire, and it neither
///   writes nor closes a suspended connection. A socket that takes only part of the bytes
///   keeps the rest here (`backlog`), and the hang-up watcher says when it can take more.
/// - **Through libmicrohttpd** (resume, then its content reader pulls `pending`) when the
///   stream cannot be written directly: before its first suspension, for an HTTP/1.0 client
///   (no chunks), or without a hang-up watcher to wait for a slow reader with.
public final class EventStream: Sendable {
    /// Bytes a slow client may fall behind by before the stream is closed; the client then
    /// reconnects and starts again from a snapshot instead of the server buffering forever.
    public static let defaultPendingLimit = 256 * 1024

    private struct State {
        var pending: [UInt8] = []
        var readOffset = 0
        var isClosed = false
        var isTerminated = false
        var isSuspended = false
        var connection: OpaquePointer?
        /// The connection's socket, only looked at while the connection is suspended (when
        /// libmicrohttpd cannot close it under us).
        var socket: Int32 = -1
        /// Set when the stream may be written straight to its socket while suspended.
        var direct: DirectWrites?
        /// Chunks (framed, on their way to the socket) that it has not taken yet, from
        /// `backlogOffset` on: they go before anything else, and only while suspended.
        var backlog: [UInt8] = []
        var backlogOffset = 0
        /// Chunks written straight to the socket (tests tell the two ways apart by it).
        var directChunks = 0
        var terminationHandlers: [@Sendable (EventStream) -> Void] = []

        var backlogCount: Int { backlog.count - backlogOffset }
    }

    /// What tests look at: whether the connection is suspended, how many chunks went
    /// straight to its socket, and how many bytes wait for the socket to take them.
    var directWriteStatus: (isSuspended: Bool, directChunks: Int, backlogBytes: Int) {
        state.withLock { ($0.isSuspended, $0.directChunks, $0.backlogCount) }
    }

    /// Tests: a small, fixed send buffer for the socket (no autotuning, which lets the
    /// kernel take megabytes), so a client that does not read fills it soon.
    func fixSocketSendBuffer(bytes: Int32) {
        state.withLock { state in
            var size = bytes
            _ = setsockopt(state.socket, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Where a directly written stream waits for its socket to take more.
    struct DirectWrites {
        weak var watcher: HangUpWatcher?
        let token: UInt64
    }

    private let state = Locked(State())
    private let pendingLimit: Int

    public init(pendingLimit: Int = EventStream.defaultPendingLimit) {
        self.pendingLimit = pendingLimit
    }

    /// True once the stream was closed by the server or the client went away.
    public var isClosed: Bool {
        state.withLock { $0.isClosed }
    }

    /// One event to send: its `event:` name, its data (which may span lines; each becomes
    /// its own `data:` line) and its `id:`.
    public struct Event: Sendable {
        public var name: String?
        public var data: String
        public var id: String?

        public init(name: String? = nil, data: String, id: String? = nil) {
            self.name = name
            self.data = data
            self.id = id
        }
    }

    /// Queues one event. `data` may span lines; each becomes its own `data:` line.
    public func send(event: String? = nil, data: String, id: String? = nil) {
        send([Event(name: event, data: data, id: id)])
    }

    /// Queues several events as one write: the connection is woken once for all of them.
    /// Sent one by one, each woke libmicrohttpd's thread for the stream, which on a busy
    /// core took the first event before the second was queued (a wake-up, a read of its
    /// wake-up and a send per event instead of per change).
    public func send(_ events: [Event]) {
        guard !events.isEmpty else { return }
        // Built as bytes: splitting and appending Strings walks characters, and cost more
        // than making the event's JSON (every event of every stream comes through here).
        var bytes: [UInt8] = []
        bytes.reserveCapacity(events.reduce(0) { $0 + $1.data.utf8.count + 48 })
        for event in events { Self.append(event, to: &bytes) }
        write(bytes)
    }

    private static func append(_ event: Event, to bytes: inout [UInt8]) {
        if let id = event.id { appendField("id", id, to: &bytes) }
        if let name = event.name { appendField("event", name, to: &bytes) }
        // Lines end at LF, CR or CRLF, as an event stream's parser reads them.
        event.data.withUTF8Bytes { text in
            var lineStart = 0
            while true {
                let lineEnd = text[lineStart...].firstIndex { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") } ?? text.count
                bytes.append(contentsOf: "data: ".utf8)
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[lineStart..<lineEnd]))
                bytes.append(UInt8(ascii: "\n"))
                guard lineEnd < text.count else { break }
                lineStart = lineEnd + 1
                if text[lineEnd] == UInt8(ascii: "\r"), lineStart < text.count, text[lineStart] == UInt8(ascii: "\n") {
                    lineStart += 1
                }
            }
        }
        bytes.append(UInt8(ascii: "\n"))
    }

    /// Tells the client how many milliseconds to wait before reconnecting.
    public func send(retry milliseconds: Int) {
        write(Array("retry: \(milliseconds)\n\n".utf8))
    }

    /// A comment line: ignored by clients, but proves the connection is alive.
    public func sendComment(_ comment: String) {
        write(Self.commentBytes(comment))
    }

    /// A comment's bytes, made once where the same comment goes to every stream (the
    /// heartbeat's ping) and handed to `send(commentBytes:)`.
    static func commentBytes(_ comment: String) -> [UInt8] {
        var bytes: [UInt8] = []
        appendField("", comment, to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// Sends bytes made by `commentBytes`.
    func send(commentBytes bytes: [UInt8]) {
        write(bytes)
    }

    /// "name: value\n", the value on one line: a line break in it would end the field early.
    private static func appendField(_ name: String, _ value: String, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: name.utf8)
        bytes.append(contentsOf: ": ".utf8)
        for byte in value.utf8 where byte != UInt8(ascii: "\n") && byte != UInt8(ascii: "\r") {
            bytes.append(byte)
        }
        bytes.append(UInt8(ascii: "\n"))
    }

    /// Ends the stream after the pending bytes are written. Chunks a slow client has not
    /// taken yet are dropped with the connection: nothing may follow a partial chunk.
    public func close() {
        state.withLock { state in
            if state.backlogCount > 0 {
                Self.drop(&state)
                return
            }
            state.isClosed = true
            Self.resumeIfSuspended(&state)
        }
    }

    /// Runs `handler` once when the stream ends, whoever ended it. Runs at once if it has.
    /// It is handed the stream, so it need not capture it: a weak reference would give every
    /// stream a side table, and then each retain and release of it takes the slow path (the
    /// heartbeat and every event retain each stream they write to).
    public func onTermination(_ handler: @escaping @Sendable (EventStream) -> Void) {
        let alreadyTerminated = state.withLock { state -> Bool in
            if state.isTerminated { return true }
            state.terminationHandlers.append(handler)
            return false
        }
        if alreadyTerminated { handler(self) }
    }

    private func write(_ bytes: [UInt8]) {
        state.withLock { state in
            guard !state.isClosed else { return }
            if state.isSuspended, state.direct != nil {
                writeDirectly(bytes, &state)
                return
            }
            if state.pending.count - state.readOffset + bytes.count > pendingLimit {
                // The client is not reading: drop it rather than grow without bound.
                state.isClosed = true
            } else {
                state.pending.append(contentsOf: bytes)
            }
            Self.resumeIfSuspended(&state)
        }
    }

    /// Sends `bytes` as one chunk while the connection is suspended (see the type's comment).
    private func writeDirectly(_ bytes: [UInt8], _ state: inout State) {
        // An empty chunk would end the response.
        guard !bytes.isEmpty else { return }
        state.directChunks += 1
        if state.backlogCount > 0 {
            guard state.backlogCount + bytes.count <= pendingLimit else {
                // The client is not reading: drop it rather than grow without bound.
                Self.drop(&state)
                return
            }
            state.backlog.append(contentsOf: Self.chunk(bytes))
            return
        }
        // Framed as it is sent (size line, bytes, CRLF in one call): no framed copy of the
        // bytes here unless the socket takes only part of them.
        var framedLength = 0
        let sent = bytes.withUnsafeBytes { mhd_shim_send_chunk_now(state.socket, $0.baseAddress, $0.count, &framedLength) }
        guard sent >= 0 else {
            // The client has gone (reset, broken pipe): end as for a hang-up. Nothing of this
            // chunk went out, so libmicrohttpd's last chunk is well framed (and fails too).
            state.isClosed = true
            Self.resumeIfSuspended(&state)
            return
        }
        if sent == framedLength { return }
        let chunk = Self.chunk(bytes)
        state.backlog = Array(chunk[sent...])
        state.backlogOffset = 0
        state.direct?.watcher?.watchWritable(socket: state.socket, token: state.direct!.token, true)
    }

    /// `bytes` as one HTTP/1.1 chunk: its size line, the bytes, CRLF. The size line is the
    /// shim's, so this is byte for byte what `mhd_shim_send_chunk_now` sends and a partial
    /// send's rest is a suffix of it.
    static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: Int(MHD_SHIM_CHUNK_SIZE_LINE_MAX))
        let sizeLineLength = chunk.withUnsafeMutableBufferPointer { line in
            line.baseAddress!.withMemoryRebound(to: CChar.self, capacity: line.count) {
                mhd_shim_chunk_size_line($0, bytes.count)
            }
        }
        chunk.removeLast(chunk.count - sizeLineLength)
        chunk.reserveCapacity(sizeLineLength + bytes.count + 2)
        chunk.append(contentsOf: bytes)
        chunk.append(contentsOf: [UInt8(ascii: "\r"), UInt8(ascii: "\n")])
        return chunk
    }

    /// The socket can take more (the hang-up watcher's thread): the backlog goes on; once
    /// it is all out, a stream closed meanwhile ends.
    func socketIsWritable() {
        state.withLock { state in
            guard state.isSuspended, state.backlogCount > 0 else { return }
            let sent = state.backlog.withUnsafeBytes { buffer in
                mhd_shim_send_now(state.socket, buffer.baseAddress! + state.backlogOffset, state.backlogCount)
            }
            guard sent >= 0 else {
                Self.drop(&state)
                return
            }
            state.backlogOffset += sent
            guard state.backlogCount == 0 else { return }
            state.backlog = []
            state.backlogOffset = 0
            state.direct?.watcher?.watchWritable(socket: state.socket, token: state.direct!.token, false)
            if state.isClosed { Self.resumeIfSuspended(&state) }
        }
    }

    /// Ends a stream whose wire may stop inside one of our chunks (its client stopped
    /// reading, or went): no last chunk may follow, so the socket is shut down first, and
    /// libmicrohttpd's attempt to end the response fails as for any client that went away
    /// (and is logged as one, which ending it with an error from the content reader was not).
    private static func drop(_ state: inout State) {
        state.isClosed = true
        if state.isSuspended, state.socket >= 0 { _ = shutdown(state.socket, Int32(SHUT_RDWR)) }
        state.backlog = []
        state.backlogOffset = 0
        resumeIfSuspended(&state)
    }

    private static func resumeIfSuspended(_ state: inout State) {
        // Resuming a connection that is not suspended is undefined behaviour in
        // libmicrohttpd, hence the flag, kept under the same lock as the suspend.
        guard state.isSuspended, let connection = state.connection else { return }
        state.isSuspended = false
        MHD_resume_connection(connection)
    }

    // MARK: Called by the daemon

    /// `direct`: how to wait for the socket when it may be written straight to (an HTTP/1.1
    /// response, which libmicrohttpd sends in chunks), nil to leave every write to it.
    func attach(to connection: OpaquePointer, socket: Int32, direct: DirectWrites? = nil) {
        // Small writes leave at once: Nagle's algorithm would hold an event for the
        // client's acknowledgement of the last one.
        if direct != nil, socket >= 0 { mhd_shim_no_delay(socket) }
        state.withLock {
            $0.connection = connection
            $0.socket = socket
            $0.direct = socket >= 0 ? direct : nil
        }
    }

    /// Closes the stream if its client has hung up. A suspended connection is invisible to
    /// libmicrohttpd's poll loop, so without this a dead client is noticed only when a
    /// heartbeat write fails, which on a half-closed socket takes a second heartbeat.
    /// Returns whether the stream is closed now.
    func closeIfPeerHasGone() -> Bool {
        state.withLock { state in
            if state.isClosed { return true }
            // Only while suspended: then the socket is certainly still this connection's.
            guard state.isSuspended, state.socket >= 0, mhd_shim_peer_has_gone(state.socket) != 0 else { return false }
            // Ended like any closed stream: the final write fails and libmicrohttpd closes the
            // socket (ending "with error" instead would log an error for every gone client).
            state.isClosed = true
            Self.resumeIfSuspended(&state)
            return true
        }
    }

    /// Fills `buffer` for libmicrohttpd; suspends the connection when nothing is pending.
    func read(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        state.withLock { state in
            let available = state.pending.count - state.readOffset
            if available > 0 {
                let count = min(available, capacity)
                state.pending.withUnsafeBufferPointer { source in
                    UnsafeMutableRawPointer(buffer).copyMemory(
                        from: source.baseAddress! + state.readOffset, byteCount: count)
                }
                state.readOffset += count
                if state.readOffset == state.pending.count {
                    state.pending.removeAll(keepingCapacity: true)
                    state.readOffset = 0
                }
                return count
            }
            if state.isClosed { return Int(MHD_CONTENT_READER_END_OF_STREAM) }
            guard let connection = state.connection else { return Int(MHD_CONTENT_READER_END_OF_STREAM) }
            // Going quiet: an idle stream holds no buffer (thousands of them wait for an
            // event most of the time; the next burst allocates afresh).
            state.pending = []
            state.isSuspended = true
            MHD_suspend_connection(connection)
            return 0
        }
    }

    /// libmicrohttpd is done with the response (client gone, error, or end of stream).
    func terminate() {
        let handlers = state.withLock { state -> [@Sendable (EventStream) -> Void] in
            state.isClosed = true
            state.isTerminated = true
            state.isSuspended = false
            state.connection = nil
            state.socket = -1
            state.pending = []
            state.backlog = []
            state.backlogOffset = 0
            defer { state.terminationHandlers = [] }
            return state.terminationHandlers
        }
        for handler in handlers { handler(self) }
    }
}
