/// One event dispatched from a `text/event-stream`, as the WHATWG "dispatch the event" step
/// produces it. Kept protocol-agnostic so the parser and connection know nothing of sign-up.
public struct ServerSentEvent: Equatable, Hashable, Sendable {
    /// The `event:` field, or "message" when the block named none (the spec's default type).
    public var type: String
    /// All `data:` lines of the block joined with "\n" (the trailing LF the spec strips is gone).
    public var data: String
    /// The stream's last event ID when this event was dispatched; `nil` when it is empty. It
    /// persists across events (an event without an `id:` line carries the previous id), which
    /// is exactly what a reconnect sends back as `Last-Event-ID`.
    public var id: String?
    /// The `retry:` value (milliseconds) that appeared in this event's own block, if any. A
    /// `retry:` in a block without data still changes the parser's `reconnectionTime`.
    public var retry: Int?

    public init(type: String = "message", data: String, id: String? = nil, retry: Int? = nil) {
        self.type = type
        self.data = data
        self.id = id
        self.retry = retry
    }
}
