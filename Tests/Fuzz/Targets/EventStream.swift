import FormWire
import LiveSignupClient
import SignupWire

extension FuzzTarget {
    /// What a program reading the live form's stream parses: the event stream (with `id:`,
    /// which a reconnect sends back as `Last-Event-ID`; the server itself ignores that header,
    /// every stream starting with a snapshot) and each event's JSON.
    static let eventStream = FuzzTarget(
        name: "event-stream",
        summary: "text/event-stream bodies and event JSON: ServerSentEventParser, SignupEvent(_:)"
    ) { input in
        var whole = ServerSentEventParser()
        let events = whole.feed(input.bytes)
        // However the network cuts the stream, the same events come out.
        var split = ServerSentEventParser()
        var byChunks: [ServerSentEvent] = []
        var start = 0, chunk = 1
        while start < input.bytes.count {
            let end = min(input.bytes.count, start + chunk)
            byChunks += split.feed(input.bytes[start..<end])
            start = end
            chunk = chunk % 7 + 1
        }
        fuzzCheck(byChunks == events, "the events depend on where the stream was cut")
        fuzzCheck(split.lastEventID == whole.lastEventID && split.reconnectionTime == whole.reconnectionTime,
                  "the last event id or retry depends on where the stream was cut")
        fuzzCheck(!whole.lastEventID.contains("\u{0}"), "an id holding NUL was taken")
        // Bounded: with a small bound, no event's data holds more than it, whatever the stream
        // (its type is one line's bytes, each invalid one read as U+FFFD's three).
        var bounded = ServerSentEventParser(maximumEventBytes: 64)
        for event in bounded.feed(input.bytes) {
            fuzzCheck(event.data.utf8.count <= 64 && event.type.utf8.count <= 3 * 64, "an event over the parser's bound")
        }
        for event in events {
            fuzzCheck(!event.type.isEmpty, "an event without a type")
            guard let decoded = try? SignupEvent(event) else { continue }
            // What the server would write for it reads back the same.
            if case .unknown = decoded { continue }
            let again = try? SignupEvent(ServerSentEvent(type: decoded.name, data: decoded.data))
            fuzzCheck(again == decoded, "an event does not survive being written and read again: \(event)")
        }
    }
}
