import Foundation

/// A fully received request, as handed to an `HTTPResponder`.
public struct HTTPRequest: Sendable {
    /// The method as sent, e.g. "GET".
    public let method: String
    /// The decoded path without the query, e.g. "/events".
    public let path: String
    /// Decoded query parameters in the order they appeared.
    public let query: [(name: String, value: String)]
    public let headers: HTTPHeaders
    /// The body bytes; empty when `bodyExceededLimit` is set.
    public let body: [UInt8]
    /// The client sent more than the server's body limit; the body was discarded unread.
    public let bodyExceededLimit: Bool

    public init(
        method: String,
        path: String,
        query: [(name: String, value: String)] = [],
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        bodyExceededLimit: Bool = false
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.bodyExceededLimit = bodyExceededLimit
    }

    /// The first query parameter with that name.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// The media type of the body without parameters, lower-cased ("application/json").
    public var mediaType: String? {
        guard let contentType = headers["Content-Type"] else { return nil }
        let essence = contentType.split(separator: ";", maxSplits: 1).first ?? ""
        return essence.trimmingCharacters(in: .whitespaces).lowercased()
    }
}

