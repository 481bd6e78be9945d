import Foundation
import Logging
import MicroHTTPD

/// One JSON object per line on standard error, as log shippers (Vector, Fluent Bit, Loki's
/// promtail, journald's JSON mode) expect: `timestamp`, `level`, `label`, `message`, then the
/// metadata as string fields.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            object[key] = "\(value)"
        }
        if let error = event.error { object["error"] = "\(error)" }
        object["timestamp"] = Self.timestamp()
        object["level"] = event.level.rawValue
        object["label"] = label
        object["message"] = "\(event.message)"
        guard var line = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        line.append(UInt8(ascii: "\n"))
        BufferedLogOutput.standardError.write([UInt8](line), urgent: event.level >= .warning)
    }

    /// RFC 3339 with milliseconds, UTC.
    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var time = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &time)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                      time.tm_year + 1900, time.tm_mon + 1, time.tm_mday,
                      time.tm_hour, time.tm_min, time.tm_sec, now.tv_nsec / 1_000_000)
    }
}
