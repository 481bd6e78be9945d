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

    /// The line as swift-log metadata; every format writes these keys.
    public var metadata: Logger.Metadata {
        // The values as they are (`.string`), not interpolated into new strings.
        var metadata: Logger.Metadata = [
            "method": .string(method), "route": .string(route), "status": .string(String(status)),
            "duration_ms": .string(durationMilliseconds), "client": .string(client),
        ]
        if let token { metadata["token"] = .string(token) }
        return metadata
    }

    /// The fields as swift-log's text format (`StreamLogHandler`'s) writes `metadata`:
    /// ` key=value` for each key in key order. Written straight from the values: the keys are
    /// known and already in order, so no dictionary is built, hashed and sorted per request.
    public func appendFields(to line: inout [UInt8]) {
        func field(_ key: StaticString, _ value: String) {
            line.append(UInt8(ascii: " "))
            key.withUTF8Buffer { line.append(contentsOf: $0) }
            line.append(UInt8(ascii: "="))
            var value = value
            value.withUTF8 { line.append(contentsOf: $0) }
        }
        field("client", client)
        field("duration_ms", durationMilliseconds)
        field("method", method)
        field("route", route)
        field("status", String(status))
        if let token { field("token", token) }
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
