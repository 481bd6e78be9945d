/// Incremental parser for the WHATWG HTML "Interpreting an event stream" algorithm.
///
/// It works on bytes rather than decoded text so that chunk boundaries can fall anywhere: in
/// the middle of a line, between the CR and LF of a CRLF, or inside a multibyte UTF-8 sequence.
/// Line terminators (CR, LF) are ASCII and never occur inside a UTF-8 sequence, so splitting on
/// bytes first and decoding each complete line afterwards is equivalent to decoding the whole
/// stream at once (invalid sequences become U+FFFD, as the spec's UTF-8 decode does).
///
/// One parser reads one response body. A reconnect starts a fresh parser seeded with the last
/// event ID, which mirrors the spec: buffers are discarded when a stream ends, the last event
/// ID string belongs to the EventSource and survives.
public struct ServerSentEventParser: Sendable {
    /// The spec's "last event ID string": committed from the `id:` buffer every time a blank
    /// line is seen, even when no event is dispatched. This is what `Last-Event-ID` sends.
    public private(set) var lastEventID: String
    /// The latest valid `retry:` value in milliseconds, `nil` until the stream sends one.
    public private(set) var reconnectionTime: Int?
    /// Events dropped for being larger than `maximumEventBytes`.
    public private(set) var droppedEvents = 0

    /// What one event (all its lines) may hold. The format sets no bound; a program reading a
    /// server it does not control needs one, or a stream that never ends a line takes all its
    /// memory. LiveSignup's largest event (a snapshot) is under 8 KiB.
    public let maximumEventBytes: Int
    public static let defaultMaximumEventBytes = 1 << 20
    // A line past the bound keeps its beginning only (enough to know a comment), and the event
    // it belongs to is dropped when it ends; so is one whose data grows past the bound.
    private var lineTooLong = false
    private var eventTooLarge = false

    private var lineBuffer: [UInt8] = []
    // A CR ends a line at once; remembering it lets an LF at the start of the next chunk be
    // recognised as the second half of a CRLF instead of an extra blank line.
    private var previousByteWasCR = false
    // The BOM may only be stripped from the very beginning of the stream.
    private var atStreamStart = true
    private var dataBuffer = ""
    private var eventTypeBuffer = ""
    private var lastEventIDBuffer: String
    private var retryInBlock: Int?

    /// - Parameter lastEventID: the ID to carry over from an earlier connection, so events
    ///   without their own `id:` line still report it.
    public init(lastEventID: String = "", maximumEventBytes: Int = ServerSentEventParser.defaultMaximumEventBytes) {
        self.lastEventID = lastEventID
        self.lastEventIDBuffer = lastEventID
        self.maximumEventBytes = maximumEventBytes
    }

    /// Feeds the next chunk of the response body and returns the events it completed, in order.
    /// Incomplete lines and events are kept until a later chunk finishes them.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            switch byte {
            case 0x0A:  // LF
                if previousByteWasCR {
                    // Second half of a CRLF: the line already ended at the CR.
                    previousByteWasCR = false
                } else {
                    endLine(into: &events)
                }
            case 0x0D:  // CR
                endLine(into: &events)
                previousByteWasCR = true
            default:
                previousByteWasCR = false
                if lineBuffer.count < maximumEventBytes {
                    lineBuffer.append(byte)
                } else {
                    lineTooLong = true
                }
            }
        }
        return events
    }

    private mutating func endLine(into events: inout [ServerSentEvent]) {
        var line = lineBuffer[...]
        lineBuffer.removeAll(keepingCapacity: true)
        if lineTooLong {
            lineTooLong = false
            // A comment may be as long as it likes: nothing of it is kept.
            if line.first != UInt8(ascii: ":") { eventTooLarge = true }
            return
        }
        if atStreamStart {
            atStreamStart = false
            // The spec's UTF-8 decode strips one leading BOM, and only at the start of the stream.
            if line.starts(with: [0xEF, 0xBB, 0xBF]) {
                line = line.dropFirst(3)
            }
        }
        process(line: line, into: &events)
    }

    private mutating func process(line: ArraySlice<UInt8>, into events: inout [ServerSentEvent]) {
        if line.isEmpty {
            dispatch(into: &events)
            return
        }
        if line.first == UInt8(ascii: ":") {
            return  // comment, e.g. the server's keep-alive ": ping"
        }
        let field: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = line[..<colon]
            value = line[line.index(after: colon)...]
            // Exactly one space after the colon is syntax, any further ones are data.
            if value.first == UInt8(ascii: " ") {
                value = value.dropFirst()
            }
        } else {
            // A line without a colon is a field name with an empty value.
            field = line
            value = []
        }
        processField(String(decoding: field, as: UTF8.self), value: value)
    }

    private mutating func processField(_ field: String, value: ArraySlice<UInt8>) {
        switch field {
        case "event":
            eventTypeBuffer = String(decoding: value, as: UTF8.self)
        case "data":
            // Counted as decoded: an invalid byte becomes U+FFFD, three bytes (found by fuzzing).
            let text = String(decoding: value, as: UTF8.self)
            guard dataBuffer.utf8.count + text.utf8.count + 1 <= maximumEventBytes else {
                eventTooLarge = true
                return
            }
            dataBuffer += text
            dataBuffer += "\n"
        case "id":
            // An id containing NULL is ignored entirely (it could not be sent back in a header).
            if !value.contains(0) {
                lastEventIDBuffer = String(decoding: value, as: UTF8.self)
            }
        case "retry":
            // Only ASCII digits; anything else (sign, space, unit, empty, overflow) is ignored.
            if !value.isEmpty,
               value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
               let milliseconds = Int(String(decoding: value, as: UTF8.self)) {
                reconnectionTime = milliseconds
                retryInBlock = milliseconds
            }
        default:
            break  // unknown fields are ignored so the format can grow
        }
    }

    private mutating func dispatch(into events: inout [ServerSentEvent]) {
        // Step 1 happens even when nothing is dispatched: a block with only `id:` still moves
        // the last event ID forward.
        lastEventID = lastEventIDBuffer
        defer {
            dataBuffer = ""
            eventTypeBuffer = ""
            retryInBlock = nil
            eventTooLarge = false
        }
        // Cut short, its data would be wrong: not dispatched at all.
        if eventTooLarge {
            droppedEvents += 1
            return
        }
        // No `data:` line at all: nothing to dispatch (a lone `data` line gives "\n", not "").
        guard !dataBuffer.isEmpty else { return }
        var data = dataBuffer
        if data.unicodeScalars.last == "\n" {
            data.unicodeScalars.removeLast()
        }
        events.append(ServerSentEvent(
            type: eventTypeBuffer.isEmpty ? "message" : eventTypeBuffer,
            data: data,
            id: lastEventID.isEmpty ? nil : lastEventID,
            retry: retryInBlock
        ))
    }
}
