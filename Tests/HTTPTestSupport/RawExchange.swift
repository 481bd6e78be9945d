import Foundation

/// One request on its own connection from a chosen loopback address, answer parsed: for
/// tests that act as several clients (per-address limits) or send exact headers.
public struct RawExchange {
    public let status: Int
    /// Header names lower-cased.
    public let headers: [String: String]
    public let body: String

    public static func send(
        port: UInt16, from address: String = "127.0.0.1", _ method: String, _ path: String,
        body: String? = nil, headers: [String: String] = [:], timeoutSeconds: Int = 10
    ) throws -> RawExchange {
        let connection = try RawHTTPConnection(port: port, from: address, timeoutSeconds: timeoutSeconds)
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        var allHeaders = headers
        if let body {
            allHeaders["Content-Length"] = String(body.utf8.count)
            if allHeaders["Content-Type"] == nil { allHeaders["Content-Type"] = "application/x-www-form-urlencoded" }
        }
        for (name, value) in allHeaders { request += "\(name): \(value)\r\n" }
        request += "\r\n" + (body ?? "")
        connection.send(request)
        _ = connection.readUntilClosed()
        return try parse(connection.received)
    }

    public struct MalformedAnswer: Error, CustomStringConvertible {
        public let text: String
        public var description: String { "not an HTTP answer: \(text.prefix(200))" }
    }

    static func parse(_ text: String) throws -> RawExchange {
        guard let headerEnd = text.range(of: "\r\n\r\n") else { throw MalformedAnswer(text: text) }
        let lines = text[..<headerEnd.lowerBound].components(separatedBy: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."),
              let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
            throw MalformedAnswer(text: text)
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return RawExchange(status: status, headers: headers, body: String(text[headerEnd.upperBound...]))
    }
}
