/// The request methods a route can be declared for. A request's method stays the token it
/// sent (`HTTPRequest.method`, any token libmicrohttpd accepts); a router reads it as one of
/// these once (`HTTPRequest.knownMethod`) and answers any other with its 405.
public enum HTTPMethod: String, Sendable, CaseIterable {
    case get = "GET"
    case head = "HEAD"
    case post = "POST"
    case put = "PUT"
    case patch = "PATCH"
    case delete = "DELETE"
    case options = "OPTIONS"
}

extension HTTPRequest {
    /// The method as one of the declared ones, or nil for any other token.
    public var knownMethod: HTTPMethod? { HTTPMethod(rawValue: method) }
}
