import Clocks
/// How an `HTTPServer` listens and what it allows.
public struct HTTPServerConfiguration: Sendable {
    /// Address or host name to bind, e.g. "127.0.0.1" or "::1".
    public var host: String
    /// 0 lets the kernel pick a free port; read it from `HTTPServer.port`.
    public var port: UInt16
    /// epoll worker threads. Connections are multiplexed on them, never a thread each.
    public var workerThreads: Int
    /// Open connections at most, event streams included.
    public var connectionLimit: Int
    /// Connections one client address may hold at once (0 = unlimited). Generous by default:
    /// many people can share one address behind a NAT, each with a stream and a keep-alive
    /// connection. Behind a reverse proxy every connection comes from the proxy: raise it.
    public var perAddressConnectionLimit: Int
    /// Seconds an idle keep-alive connection is kept. Event streams are exempt while they
    /// wait for events (they are suspended); heartbeats catch dead peers instead.
    public var idleTimeoutSeconds: Int
    /// Bytes of libmicrohttpd's memory pool per connection: it holds the request line and
    /// headers as they are read and the response headers as they are written (bodies pass
    /// through it in pieces). Headers that do not fit are answered 431. 0 = the library's
    /// default of 32 KiB.
    public var connectionMemoryBytes: Int
    /// Request bodies over this size are discarded and flagged, never buffered.
    public var maxBodyBytes: Int
    /// How often open event streams get a comment line so dead peers are noticed.
    public var heartbeatIntervalSeconds: Double
    /// The clock the heartbeat runs by (a test's clock sends it when moved).
    public var clock: any WallClock
    /// Receives libmicrohttpd's own messages (a port in use, a failed accept, a client that
    /// hung up mid-answer), each marked with whether it is only a client gone.
    public var errorLog: (@Sendable (LibraryMessage) -> Void)?

    public init(
        host: String = "127.0.0.1",
        port: UInt16 = 8080,
        workerThreads: Int = 2,
        connectionLimit: Int = 10_000,
        perAddressConnectionLimit: Int = 256,
        idleTimeoutSeconds: Int = 60,
        maxBodyBytes: Int = 16 * 1024,
        connectionMemoryBytes: Int = 0,
        heartbeatIntervalSeconds: Double = 15,
        clock: any WallClock = SystemClock(),
        errorLog: (@Sendable (LibraryMessage) -> Void)? = nil
    ) {
        self.clock = clock
        self.perAddressConnectionLimit = perAddressConnectionLimit
        self.errorLog = errorLog
        self.host = host
        self.port = port
        self.workerThreads = workerThreads
        self.connectionLimit = connectionLimit
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.maxBodyBytes = maxBodyBytes
        self.connectionMemoryBytes = connectionMemoryBytes
        self.heartbeatIntervalSeconds = heartbeatIntervalSeconds
    }
}
