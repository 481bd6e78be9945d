#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A bare TCP connection for checking exactly which bytes the server writes (the `retry:`,
/// `id:` and comment lines that typed clients hide). Reads block with a timeout.
///
/// `from` picks the client's own loopback address (any of 127.0.0.0/8), so one test can be
/// several clients as far as per-address limits are concerned.
public final class RawHTTPConnection {
    private let socketFD: Int32
    public private(set) var received = ""

    /// `receiveBufferBytes`: a small receive buffer (set before connecting, so the window is
    /// small from the start) makes a client that does not read fill the server's socket soon.
    public init(port: UInt16, from sourceAddress: String? = nil, timeoutSeconds: Int = 5,
                receiveBufferBytes: Int32? = nil) throws {
        socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw POSIXError(.EIO) }
        if var size = receiveBufferBytes {
            setsockopt(socketFD, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(socketFD, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let fd = socketFD
        if let sourceAddress, Self.withAddress(sourceAddress, port: 0, { bind(fd, $0, $1) }) != 0 {
            close(socketFD)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        guard Self.withAddress("127.0.0.1", port: port, { connect(fd, $0, $1) }) == 0 else {
            close(socketFD)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    /// Calls `body` (bind or connect) with an IPv4 socket address.
    private static func withAddress(_ address: String, port: UInt16,
                                    _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = port.bigEndian
        socketAddress.sin_addr.s_addr = inet_addr(address)
        return withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    private var isClosed = false

    deinit { if !isClosed { close(socketFD) } }

    /// Closes the socket now, as the kernel does for a client process that is killed.
    public func closeNow() {
        guard !isClosed else { return }
        isClosed = true
        close(socketFD)
    }

    /// Aborts the connection (RST instead of FIN), as a client whose network vanished or that
    /// closed with unread data does.
    public func resetNow() {
        guard !isClosed else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(socketFD, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        closeNow()
    }

    public func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(socketFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until `predicate` holds for everything received so far, the peer closes, or
    /// `timeout` passes (even if bytes keep arriving). Returns whether the predicate holds.
    @discardableResult
    public func read(timeout: TimeInterval = 5, until predicate: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !predicate(received) && Date() < deadline {
            let count = recv(socketFD, &buffer, buffer.count, 0)
            if count <= 0 { return predicate(received) }
            received += String(decoding: buffer[0..<count], as: UTF8.self)
        }
        return predicate(received)
    }

    /// Whether the server has closed the connection, without waiting (any bytes it sent
    /// before closing are kept in `received`).
    public var isClosedByServer: Bool { readAvailable() }

    /// Reads whatever has arrived, without waiting; returns whether the server has closed.
    @discardableResult
    public func readAvailable() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socketFD, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                received += String(decoding: buffer[0..<count], as: UTF8.self)
                continue
            }
            return count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)
        }
    }

    /// Reads until the server closes the connection (or the timeout passes); true if closed.
    public func readUntilClosed() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socketFD, &buffer, buffer.count, 0)
            if count == 0 { return true }
            if count < 0 { return false }
            received += String(decoding: buffer[0..<count], as: UTF8.self)
        }
    }
}
