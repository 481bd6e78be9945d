import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client for a `text/event-stream` URL with the browser EventSource's behaviour: it
/// reconnects after the server's `retry` time sending `Last-Event-ID`, and fails (no reconnect)
/// on a non-200 answer or a wrong Content-Type.
///
/// The connection opens when `events` is first read. It stops on `close()`, on a failure, or
/// when the consumer of `events` stops iterating.
///
/// Checked `Sendable`: only immutable properties; the mutable part is the lock-protected
/// `EventSourceDriver`.
public final class EventSourceConnection: Sendable {
    public let url: URL
    private let driver: EventSourceDriver

    /// - Parameters:
    ///   - headers: extra request headers; `Accept`, `Cache-Control` and `Last-Event-ID` are
    ///     set by the connection.
    ///   - lastEventID: sent as `Last-Event-ID` on the first request when not empty.
    ///   - reconnectionTime: the delay before reconnecting until the server sends `retry:`
    ///     (the spec's default is implementation-defined; 2 s like LiveSignup's server).
    ///   - maximumReconnectionTime: caps any delay, including the server's `retry:`; lets
    ///     tests reconnect quickly against a server that asks for 2 s.
    ///   - maximumReconnectAttempts: after this many consecutive attempts that got no answer
    ///     the stream fails with `EventSourceError.gaveUp`; `nil` retries forever (the spec).
    ///   - configuration: copied; its idle timeout (`timeoutIntervalForRequest`, 60 s by
    ///     default) must exceed the server's keep-alive interval (`--heartbeat-seconds`, 15 s by default).
    public init(
        url: URL,
        headers: [String: String] = [:],
        lastEventID: String = "",
        reconnectionTime: Duration = .seconds(2),
        maximumReconnectionTime: Duration? = nil,
        maximumReconnectAttempts: Int? = nil,
        configuration: URLSessionConfiguration = .default
    ) {
        self.url = url
        driver = EventSourceDriver(
            url: url,
            headers: headers,
            lastEventID: lastEventID,
            reconnectionTime: Self.milliseconds(reconnectionTime),
            maximumReconnectionTime: maximumReconnectionTime.map(Self.milliseconds),
            maximumReconnectAttempts: maximumReconnectAttempts,
            configuration: configuration
        )
    }

    /// The events of this connection and all its reconnects, in order. Reading it starts the
    /// connection; every read returns the same single-consumer stream. It finishes normally
    /// after `close()` and with an `EventSourceError` when the connection fails.
    public var events: AsyncThrowingStream<ServerSentEvent, Error> {
        driver.start()
        return driver.stream
    }

    /// The ID a reconnect would send as `Last-Event-ID` ("" when none yet).
    public var lastEventID: String {
        driver.lastEventID
    }

    /// The current delay before a reconnect: the server's latest `retry:`, or the initial value.
    public var reconnectionTime: Duration {
        .milliseconds(driver.reconnectionTime)
    }

    /// Stops the connection and any pending reconnect and finishes `events`. Idempotent.
    public func close() {
        driver.close()
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
