import Foundation
import Logging
import SignupServer
import WebKernel

/// Standard error, written in batches by a thread of its own: a log line costs the request
/// thread that makes it a copy into memory, not a `write(2)` with the stream's lock held.
/// The access log writes a line per request, so under typing load this was a quarter of
/// the server's CPU per edit (Benchmarks/README.md, issue 24).
///
/// Lines stay in order. Warnings and worse are written at once, with everything before
/// them, so a crash right after one loses nothing that explains it; so is everything at
/// exit. Memory is bounded: past `capacity` bytes waiting (standard error blocked, a log
/// shipper stuck), lines are dropped and counted, and the count is written when writing
/// resumes.
final class BufferedLogOutput: @unchecked Sendable {
    static let standardError = BufferedLogOutput(descriptor: STDERR_FILENO)

    /// How long lines gather before they are written (a batch under load, one line when quiet).
    let interval: TimeInterval
    let capacity: Int
    private let descriptor: Int32
    private let state = NSCondition()
    // Guarded by `state`, which is their exclusivity: no runtime check per access (see
    // DEVELOPMENT.md, "exclusivity"; a `compose` that logged would deadlock first).
    @exclusivity(unchecked) private var pending: [UInt8] = []
    @exclusivity(unchecked) private var dropped = 0
    @exclusivity(unchecked) private var writerStarted = false
    /// Held while a batch is taken and written, so batches never overtake each other.
    private let writing = NSLock()
    /// The emptied buffer of the last batch written, which `pending` becomes next (guarded
    /// by `writing`).
    private var spare: [UInt8] = []

    init(descriptor: Int32, interval: TimeInterval = 0.05, capacity: Int = 1 << 20) {
        self.descriptor = descriptor
        self.interval = interval
        self.capacity = capacity
        pending.reserveCapacity(64 * 1024)
    }

    /// Queues the bytes of one line (ending in a newline); `urgent` writes it, and all before
    /// it, now.
    func write(_ line: [UInt8], urgent: Bool) {
        write(urgent: urgent) { $0.append(contentsOf: line) }
    }

    /// Queues one line that `compose` appends (ending in a newline) straight into the queue:
    /// the access log's line per request is made where it waits, with no array of its own to
    /// allocate and copy (issue 24). `compose` runs holding the queue's lock, so it must only
    /// append bytes.
    func write(urgent: Bool, _ compose: (inout [UInt8]) -> Void) {
        state.lock()
        let wasEmpty = pending.isEmpty
        let lineStart = pending.count
        compose(&pending)
        if pending.count > capacity {
            pending.removeLast(pending.count - lineStart)
            dropped += 1
        }
        if !writerStarted {
            writerStarted = true
            let thread = Thread { [self] in writeForever() }
            thread.name = "log-writer"
            thread.start()
        }
        // The writer is woken by a batch's first line and by a full batch only: a wake-up per
        // line would cost the thread switch the batching is there to save.
        if wasEmpty || pending.count >= Self.batchBytes { state.signal() }
        state.unlock()
        if urgent { flush() }
    }

    /// Writes everything queued, on the caller's thread.
    func flush() {
        writing.lock()
        defer { writing.unlock() }
        // The two buffers trade places, so the request threads' lock is held for a swap, not
        // for a copy of the batch.
        var batch = spare
        state.lock()
        swap(&batch, &pending)
        let lost = dropped
        dropped = 0
        state.unlock()
        if lost > 0 {
            writeAll(Array("\(lost) log lines were dropped: standard error was not keeping up\n".utf8))
        }
        writeAll(batch)
        batch.removeAll(keepingCapacity: true)
        spare = batch
    }

    /// A batch is written `interval` after its first line, or as soon as it holds
    /// `batchBytes`: many lines per write under load, one line soon when quiet.
    private func writeForever() {
        while true {
            state.lock()
            while pending.isEmpty { state.wait() }
            let due = Date(timeIntervalSinceNow: interval)
            while pending.count < Self.batchBytes, state.wait(until: due) {}
            state.unlock()
            flush()
        }
    }

    private static let batchBytes = 64 * 1024

    private func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return  // standard error is gone: nothing else to tell it
                }
            }
        }
    }
}

/// swift-log's plain text lines (`StreamLogHandler`'s format, so nothing changes for whoever
/// reads them), written through `BufferedLogOutput`.
struct TextLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    let output: BufferedLogOutput

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        // The access log's loggers carry no metadata of their own: its lines skip the merge.
        var merged = metadata.isEmpty ? event.metadata ?? [:] : metadata.merging(event.metadata ?? [:]) { $1 }
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        let line = Self.line(level: event.level, label: label, source: event.source, message: event.message.description) { line in
            for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
                line.append(UInt8(ascii: " "))
                line.appendUTF8(key)
                line.append(UInt8(ascii: "="))
                if case .string(let text) = value {
                    line.appendUTF8(text)  // most values: no `description` copy
                } else {
                    line.appendUTF8(value.description)
                }
            }
        }
        output.write(line, urgent: event.level >= .warning)
    }

    /// One line of swift-log's text format: `timestamp level label:`, the fields (` key=value`,
    /// keys in order), ` [source] message` and a newline. Bytes, not a String: appending to a
    /// String checks every seam for characters that join across it, which made the access
    /// line cost more than routing the edit.
    static func line(level: Logger.Level, label: String, source: String, message: String,
                     fields: (inout [UInt8]) -> Void) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(256)
        appendLine(to: &line, level: level, label: label, source: source, message: message, fields: fields)
        return line
    }

    /// The same line, appended to `line`.
    static func appendLine(to line: inout [UInt8], level: Logger.Level, label: String, source: String, message: String,
                           fields: (inout [UInt8]) -> Void) {
        line.appendUTF8(LogTimestamp.now())
        line.append(UInt8(ascii: " "))
        line.appendUTF8(level.rawValue)
        line.append(UInt8(ascii: " "))
        line.appendUTF8(label)
        line.append(UInt8(ascii: ":"))
        fields(&line)
        line.appendUTF8(" [")
        line.appendUTF8(source)
        line.appendUTF8("] ")
        line.appendUTF8(message)
        line.append(UInt8(ascii: "\n"))
    }
}

/// The access log in `TextLogHandler`'s format, written from each line's values: the bytes
/// `Logger.info` through `TextLogHandler` writes for the line's metadata, without the
/// dictionary swift-log's API needs (built, hashed and sorted for every request).
struct TextAccessLines: AccessLineWriting {
    let label: String
    let logLevel: Logger.Level
    let output: BufferedLogOutput

    var isEnabled: Bool { logLevel <= .info }

    func write(_ access: AccessLine) {
        output.write(urgent: false) { pending in
            TextLogHandler.appendLine(to: &pending, level: .info, label: label, source: AccessLine.source,
                                      message: Self.message) { access.appendFields(to: &$0) }
        }
    }

    /// The access line's message as text, made once rather than per request.
    private static let message = AccessLine.message.description
}

extension [UInt8] {
    /// Appends a string's UTF-8 bytes from its own storage, one copy of a buffer:
    /// `append(contentsOf: text.utf8)` walks the view's indices (a third more instructions
    /// per access line, measured with callgrind).
    mutating func appendUTF8(_ text: String) {
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }
}

/// `StreamLogHandler`'s timestamp (local time, "%Y-%m-%dT%H:%M:%S%z"), made once a second:
/// `localtime` and `strftime` per line showed in the access log's profile.
enum LogTimestamp {
    private static let last = NSLock()
    nonisolated(unsafe) private static var second: time_t = -1
    nonisolated(unsafe) private static var text = ""

    static func now() -> String {
        var current = time(nil)
        last.lock()
        defer { last.unlock() }
        if current != second {
            var local = tm()
            var buffer = [CChar](repeating: 0, count: 64)
            if localtime_r(&current, &local) != nil, strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local) > 0 {
                text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            } else {
                text = "<unknown>"
            }
            second = current
        }
        return text
    }
}
