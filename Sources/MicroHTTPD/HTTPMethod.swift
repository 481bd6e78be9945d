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

    /// The method `token` names (exactly, case-sensitive as HTTP says), or nil. Chosen by the
    /// token's length and first byte and then compared once: `init(rawValue:)` compiles to a
    /// string switch that cost about 200 instructions a call, on every request.
    public init?(token: String) {
        let candidate: HTTPMethod
        switch token.utf8.count {
        case 3: candidate = token.utf8.first == UInt8(ascii: "G") ? .get : .put
        case 4: candidate = token.utf8.first == UInt8(ascii: "H") ? .head : .post
        case 5: candidate = .patch
        case 6: candidate = .delete
        case 7: candidate = .options
        default: return nil
        }
        guard token == candidate.rawValue else { return nil }
        self = candidate
    }

    /// Its place among the cases, for tables indexed by method.
    public var position: Int {
        switch self {
        case .get: 0
        case .head: 1
        case .post: 2
        case .put: 3
        case .patch: 4
        case .delete: 5
        case .options: 6
        }
    }
}

extension HTTPRequest {
    /// The method as one of the declared ones, or nil for any other token.
    public var knownMethod: HTTPMethod? { HTTPMethod(token: method) }
}
