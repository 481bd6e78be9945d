import FormWire
import Foundation

/// A known sign-up event whose payload could not be decoded. Carries the event so the cause
/// can be seen in a test failure, and a sentence instead of a raw `DecodingError` dump.
public struct SignupEventDecodingError: Error, Equatable, Sendable, CustomStringConvertible, LocalizedError {
    public var event: ServerSentEvent
    /// E.g. "missing key 'state'" or "the data is not valid JSON".
    public var reason: String

    public init(event: ServerSentEvent, reason: String) {
        self.event = event
        self.reason = reason
    }

    public var description: String {
        // Event payloads never contain passwords (PROTOCOL.md), so quoting them is safe; the
        // cut keeps a runaway payload from flooding logs.
        let data = event.data.count > 200 ? String(event.data.prefix(200)) + "…" : event.data
        return "Cannot decode the '\(event.type)' event: \(reason). Data: \(data)"
    }

    public var errorDescription: String? { description }

    /// Turns a `DecodingError` into a short sentence naming the JSON path.
    public static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            let keys = (codingPath + (last.map { [$0] } ?? [])).map { key in
                key.intValue.map { "[\($0)]" } ?? key.stringValue
            }
            return keys.isEmpty ? "the top level" : "'" + keys.joined(separator: ".") + "'"
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "missing key \(path(context.codingPath, key))"
        case .typeMismatch(let type, let context):
            return "expected \(type) at \(path(context.codingPath))"
        case .valueNotFound(let type, let context):
            return "null where \(type) was expected at \(path(context.codingPath))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return "the data is not valid JSON (\(context.debugDescription))"
            }
            return "invalid value at \(path(context.codingPath)) (\(context.debugDescription))"
        @unknown default:
            return String(describing: error)
        }
    }
}
