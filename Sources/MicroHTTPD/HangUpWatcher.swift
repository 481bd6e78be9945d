import Foundation
import MicroHTTPDShims

/// Notices at once when the client of an event stream hangs up (a tab closed, a laptop lid
/// shut). A suspended connection is invisible to libmicrohttpd's loop, so otherwise a gone
/// client keeps its connection and its stream until the next heartbeat, up to 15 s later.
///
/// One epoll set and one thread serve every stream. Watching costs one `epoll_ctl` when a
/// stream opens and nothing per event; the heartbeat's own check stays as the backstop.
final class HangUpWatcher: Sendable {
    private struct Watched {
        var streams: [UInt64: EventStream] = [:]
        var nextToken: UInt64 = 1
        var isStopped = false
    }

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
        let thread = Thread { [self] in run() }
        thread.name = "stream-hangups"
        thread.start()
    }

    /// Watches `stream`'s socket until the stream ends. Call while libmicrohttpd cannot
    /// close the socket (from the access handler).
    func watch(_ stream: EventStream, socket: Int32) {
        guard socket >= 0 else { return }
        let token = watched.withLock { watched -> UInt64? in
            guard !watched.isStopped else { return nil }
            defer { watched.nextToken += 1 }
            watched.streams[watched.nextToken] = stream
            return watched.nextToken
        }
        guard let token else { return }
        stream.onTermination { [weak self] in
            _ = self?.watched.withLock { $0.streams.removeValue(forKey: token) }
        }
        if mhd_shim_hangups_watch(set, socket, token) != 0 {
            _ = watched.withLock { $0.streams.removeValue(forKey: token) }
        }
    }

    /// Ends the thread and closes the set. Streams still open are left to their heartbeat.
    func stop() {
        let wasRunning = watched.withLock { watched -> Bool in
            defer { watched.isStopped = true; watched.streams = [:] }
            return !watched.isStopped
        }
        guard wasRunning else { return }
        mhd_shim_hangups_wake(wake)
        finished.wait()
        close(set)
        close(wake)
    }

    private func run() {
        var tokens = [UInt64](repeating: 0, count: 64)
        while !watched.withLock({ $0.isStopped }) {
            let count = Int(mhd_shim_hangups_wait(set, &tokens, Int32(tokens.count)))
            if count < 0 { break }
            let gone = watched.withLock { watched in tokens[0..<count].compactMap { watched.streams[$0] } }
            // Closing resumes a suspended connection; libmicrohttpd's write then fails and it
            // releases the connection and the stream as for any client that went away.
            for stream in gone { stream.close() }
        }
        finished.signal()
    }
}
