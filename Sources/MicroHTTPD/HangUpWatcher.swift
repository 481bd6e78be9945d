import Foundation
import MicroHTTPDShims
import Locking

/// Notices at once when the peer of any connection hangs up (a tab closed, a laptop lid shut,
/// a client that gave up halfway through its request) and makes libmicrohttpd let it go.
///
/// Two kinds of connection would otherwise linger until a timer: a suspended one (an event
/// stream between events) is invisible to libmicrohttpd's loop, and libmicrohttpd 0.9.75 can
/// miss a hang-up that arrives with the request's last bytes (it reads them, sees fewer bytes
/// than it asked for, and waits for a readiness edge that never comes) — 6,000 descriptors
/// once waited out the 30 s idle timeout that way (issue 25).
///
/// Every connection's socket is in one epoll set (edge-triggered `EPOLLRDHUP`, one thread for
/// all). On a hang-up: a stream on the connection is closed (which resumes it; its next write
/// fails and libmicrohttpd releases it), and libmicrohttpd is nudged to read the socket again
/// (`shutdown(SHUT_RD)`: it wakes libmicrohttpd's own epoll, the read returns end of file as
/// the peer's FIN already said, and libmicrohttpd closes or finishes the connection by its own
/// rules). Nudges repeat a few times while the connection stays, in case the first one came
/// before libmicrohttpd had read what preceded the FIN.
///
/// A socket is only ever touched between libmicrohttpd's "connection started" and "closed"
/// notices, under the same lock as they take: the number cannot have been reused by then.
final class HangUpWatcher: Sendable {
    private struct Connection {
        let socket: Int32
        var stream: EventStream?
        var hasHungUp = false
    }

    /// Nudges still to give a hung-up connection, and when the next one is due.
    private struct Nudges {
        var given = 0
        var next: Date
    }

    private struct Watched {
        var connections: [UInt64: Connection] = [:]
        /// Only the hung-up connections still open (a few), not every connection.
        var nudging: [UInt64: Nudges] = [:]
        var nextToken: UInt64 = 1
        var isRunning = false
        var isStopped = false
    }

    /// Nudges after a hang-up: at once, then after each of these delays while it stays open.
    private static let nudgeDelays: [TimeInterval] = [0.25, 0.5, 1, 2]

    private let set: Int32
    private let wake: Int32
    private let watched = Locked(Watched())
    private let finished = DispatchSemaphore(value: 0)

    /// Nil if the kernel refuses an epoll set; streams then rely on the heartbeat.
    init?() {
        var wake: Int32 = -1
        let set = mhd_shim_hangups_create(&wake)
        guard set >= 0 else { return nil }
        self.set = set
        self.wake = wake
    }

    deinit {
        // Only when its thread never ran (`stop` closes them after it ends otherwise).
        if !watched.withLock({ $0.isRunning }) {
            close(set)
            close(wake)
        }
    }

    /// Starts the watching thread (before the daemon, so no connection is missed).
    func start() {
        let starting = watched.withLock { watched -> Bool in
            guard !watched.isRunning, !watched.isStopped else { return false }
            watched.isRunning = true
            return true
        }
        guard starting else { return }
        let thread = Thread { [self] in run() }
        thread.name = "connection-hangups"
        thread.start()
    }

    /// A connection was accepted; its token goes in libmicrohttpd's socket context.
    func connectionOpened(socket: Int32) -> UInt64 {
        let token = watched.withLock { watched -> UInt64 in
            defer { watched.nextToken += 1 }
            watched.connections[watched.nextToken] = Connection(socket: socket)
            return watched.nextToken
        }
        _ = mhd_shim_hangups_watch(set, socket, token)
        return token
    }

    /// libmicrohttpd is about to close the connection's socket.
    func connectionClosed(_ token: UInt64) {
        // The socket leaves the epoll set when libmicrohttpd closes it.
        watched.withLock { watched in
            watched.connections[token] = nil
            watched.nudging[token] = nil
        }
    }

    /// Closes `stream` when its connection's peer hangs up (at once if it already has).
    /// Call from the access handler, while libmicrohttpd holds the connection.
    func watch(_ stream: EventStream, connection token: UInt64) {
        let hasHungUp = watched.withLock { watched -> Bool in
            guard watched.connections[token] != nil else { return false }
            watched.connections[token]?.stream = stream
            return watched.connections[token]?.hasHungUp ?? false
        }
        if hasHungUp { stream.close() }
        stream.onTermination { [weak self] stream in
            self?.watched.withLock { watched in
                // A keep-alive connection may carry a later stream: forget only this one.
                if watched.connections[token]?.stream === stream {
                    watched.connections[token]?.stream = nil
                }
            }
        }
    }

    /// Reports (`on`) or stops reporting when `socket` can take more bytes; the stream on
    /// its connection is then told (`EventStream.socketIsWritable`). Call while the
    /// connection is suspended: the socket is certainly still its own.
    func watchWritable(socket: Int32, token: UInt64, _ on: Bool) {
        _ = mhd_shim_hangups_watch_writable(set, socket, token, on ? 1 : 0)
    }

    /// Ends the thread and closes the set (after the daemon has stopped).
    func stop() {
        let wasRunning = watched.withLock { watched -> Bool in
            defer {
                watched.isStopped = true
                watched.connections = [:]
                watched.nudging = [:]
            }
            return watched.isRunning && !watched.isStopped
        }
        // Never started: deinit closes the set and the wake-up descriptor.
        guard wasRunning else { return }
        mhd_shim_hangups_wake(wake)
        finished.wait()
        close(set)
        close(wake)
    }

    private func run() {
        var tokens = [UInt64](repeating: 0, count: 64)
        var writableOnly = [UInt8](repeating: 0, count: 64)
        var timeoutMilliseconds: Int32 = -1
        while !watched.withLock({ $0.isStopped }) {
            let count = Int(mhd_shim_hangups_wait(set, &tokens, &writableOnly, Int32(tokens.count), timeoutMilliseconds))
            if count < 0 { break }
            let now = Date()
            var writable: [EventStream] = []
            let streams = watched.withLock { watched -> [EventStream] in
                var streams: [EventStream] = []
                for (token, onlyWritable) in zip(tokens[0..<count], writableOnly[0..<count]) where token != 0 {
                    if onlyWritable != 0 {
                        if let stream = watched.connections[token]?.stream { writable.append(stream) }
                        continue
                    }
                    guard var connection = watched.connections[token], !connection.hasHungUp else { continue }
                    connection.hasHungUp = true
                    if let stream = connection.stream { streams.append(stream) }
                    watched.connections[token] = connection
                    watched.nudging[token] = Nudges(next: now)
                }
                timeoutMilliseconds = nudgeDue(in: &watched, now: now)
                return streams
            }
            // Closing resumes a suspended connection; libmicrohttpd's write then fails and it
            // releases the connection and the stream as for any client that went away.
            for stream in streams { stream.close() }
            for stream in writable { stream.socketIsWritable() }
        }
        finished.signal()
    }

    /// Gives the nudges that are due (under the lock: each socket is still its connection's)
    /// and returns the milliseconds until the next one, or -1 for none.
    private func nudgeDue(in watched: inout Watched, now: Date) -> Int32 {
        var next = Date.distantFuture
        for (token, var nudges) in watched.nudging {
            if nudges.next <= now, let connection = watched.connections[token] {
                mhd_shim_nudge(connection.socket)
                nudges.given += 1
                guard nudges.given <= Self.nudgeDelays.count else {
                    watched.nudging[token] = nil
                    continue
                }
                nudges.next = now.addingTimeInterval(Self.nudgeDelays[nudges.given - 1])
                watched.nudging[token] = nudges
            }
            next = min(next, nudges.next)
        }
        guard next != .distantFuture else { return -1 }
        return Int32(max(1, min(10_000, (next.timeIntervalSince(now) * 1000).rounded(.up))))
    }
}
