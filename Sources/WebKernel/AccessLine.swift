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
    private func forEachField(_ body: (StaticString, String) -> Void) {
        body("client", client)
        body("duration_ms", durationMilliseconds)
        body("method", method)
        body("route", route)
        body("status", String(status))
        if let token { body("token", token) }
    }

    /// The line as swift-log metadata; every format writes these keys.
    public var metadata: Logger.Metadata {
        // The values as they are (`.string`), not interpolated into new strings.
        var metadata: Logger.Metadata = [:]
        forEachField { key, value in metadata[key.description] = .string(value) }
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
            var value = value
            value.withUTF8 { line.append(contentsOf: $0) }
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
