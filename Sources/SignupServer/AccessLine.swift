import Logging

/// One request's access line: what an operator reads for every request, whatever writes it.
public struct AccessLine: Sendable {
    public var method: String
    /// The route's row name (a fixed set), never the raw path.
    public var route: String
    public var status: Int
    /// "3.41": two decimals.
    public var durationMilliseconds: String
    public var client: String
    /// Six letters or digits of the form token, when the request carried one.
    public var token: String?

    public init(method: String, route: String, status: Int, durationMilliseconds: String, client: String, token: String?) {
        self.method = method
        self.route = route
        self.status = status
        self.durationMilliseconds = durationMilliseconds
        self.client = client
        self.token = token
    }

    /// The line's message: swift-log's `message`.
    public static let message: Logger.Message = "request"
    /// The module that writes it: swift-log's `source` (the module of the call site).
    public static let source = "SignupServer"

    /// Each field as key and value, keys in order: the one place the line's keys are named.
    /// Both formats below are derived from it.
    private func forEachField(_ body: (StaticString, FieldValue) -> Void) {
        body("client", .text(client))
        body("duration_ms", .text(durationMilliseconds))
        body("method", .text(method))
        body("route", .text(route))
        body("status", .number(status))
        if let token { body("token", .text(token)) }
    }

    /// A field's value: the status stays a number until a format writes it, so the text
    /// format appends its digits without making a string per request.
    private enum FieldValue {
        case text(String)
        case number(Int)

        var text: String {
            switch self {
            case .text(let text): return text
            case .number(let number): return String(number)
            }
        }
    }

    /// The line as swift-log metadata; every format writes these keys.
    public var metadata: Logger.Metadata {
        // The values as they are (`.string`), not interpolated into new strings.
        var metadata: Logger.Metadata = [:]
        forEachField { key, value in metadata[key.description] = .string(value.text) }
        return metadata
    }

    /// The fields as swift-log's text format (`StreamLogHandler`'s) writes `metadata`:
    /// ` key=value` for each key in key order. Written straight from the values: the keys are
    /// known and already in order, so no dictionary is built, hashed and sorted per request.
    public func appendFields(to line: inout [UInt8]) {
        forEachField { key, value in
            line.append(UInt8(ascii: " "))
            key.withUTF8Buffer { line.append(contentsOf: $0) }
            line.append(UInt8(ascii: "="))
            switch value {
            case .text(var text):
                text.withUTF8 { line.append(contentsOf: $0) }
            case .number(let number):
                Self.appendDecimal(number, to: &line)
            }
        }
    }

    /// `number`'s decimal digits, as `String(number)` spells them.
    static func appendDecimal(_ number: Int, to line: inout [UInt8]) {
        if number < 0 { line.append(UInt8(ascii: "-")) }
        var width = 1
        var rest = number.magnitude
        while rest >= 10 {
            rest /= 10
            width += 1
        }
        // Room for the digits, then each written from the last.
        line.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width))
        var value = number.magnitude
        for index in (line.count - width..<line.count).reversed() {
            line[index] = UInt8(ascii: "0") + UInt8(value % 10)
            value /= 10
        }
    }
}

/// Where access lines go: through swift-log (`LoggerAccessLines`, the default), or a writer
/// of the process's own that writes the same text without a logger.
public protocol AccessLineWriting: Sendable {
    /// False when no line would be written (access log off, or a level above `info`): then
    /// none is built.
    var isEnabled: Bool { get }
    func write(_ line: AccessLine)
}

/// Access lines as swift-log `info` events on a logger of their own (`livesignup.access`), so
/// any handler an operator bootstraps receives them.
public struct LoggerAccessLines: AccessLineWriting {
    public let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public var isEnabled: Bool { logger.logLevel <= .info }

    public func write(_ line: AccessLine) {
        logger.info(AccessLine.message, metadata: line.metadata, source: AccessLine.source)
    }
}
