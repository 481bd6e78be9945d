import Foundation

/// A fully received request, as handed to an `HTTPResponder`.
public struct HTTPRequest: Sendable {
    /// The method as sent, e.g. "GET".
    public let method: String
    /// The decoded path without the query, e.g. "/events". An encoded NUL stays a NUL.
    public let path: String
    /// The path exactly as sent, before percent-decoding ("/static/app%2ejs").
    public let rawPath: String
    /// Decoded query parameters in the order they appeared.
    public let query: [(name: String, value: String)]
    public let headers: HTTPHeaders
    /// The body bytes; empty when `bodyExceededLimit` is set.
    public let body: [UInt8]
    /// The client sent more than the server's body limit; the body was discarded unread.
    public let bodyExceededLimit: Bool
    /// "HTTP/1.1" or "HTTP/1.0".
    public let version: String
    /// The connection's peer address ("127.0.0.1", "::1"); a proxy's when behind one.
    public let remoteAddress: String

    public init(
        method: String,
        path: String,
        rawPath: String? = nil,
        query: [(name: String, value: String)] = [],
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        bodyExceededLimit: Bool = false,
        version: String = "HTTP/1.1",
        remoteAddress: String = "127.0.0.1"
    ) {
        self.method = method
        self.path = path
        self.rawPath = rawPath ?? path
        self.version = version
        self.remoteAddress = remoteAddress
        self.query = query
        self.headers = headers
        self.body = body
        self.bodyExceededLimit = bodyExceededLimit
    }

    /// The first query parameter with that name.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// The value of every cookie named `name` in `header` (a `Cookie` header's `a=b; c=d`,
    /// RFC 6265 §5.4), in the order sent: a name may come more than once (a cookie set for
    /// this host and one set for its parent domain, or a planted one).
    ///
    /// Read on bytes, as browsers and proxies read it: split at the byte ';', spaces and tabs
    /// trimmed, the name compared byte for byte. Swift's `Character` comparison would also
    /// split at U+037E GREEK QUESTION MARK (canonically equal to ';') and trim other spaces,
    /// so a value inside one cookie could pass for another cookie of ours (found by fuzzing).
    public static func cookieValues(named name: String, in header: String?) -> [String] {
        guard let header else { return [] }
        let wanted = Array(name.utf8)
        var values: [String] = []
        for pair in header.utf8.split(separator: UInt8(ascii: ";")) {
            var pair = pair[...]
            while let first = pair.first, first == 0x20 || first == 0x09 { pair = pair.dropFirst() }
            while let last = pair.last, last == 0x20 || last == 0x09 { pair = pair.dropLast() }
            guard let equals = pair.firstIndex(of: UInt8(ascii: "=")), pair[..<equals].elementsEqual(wanted) else { continue }
            values.append(String(decoding: pair[pair.index(after: equals)...], as: UTF8.self))
        }
        return values
    }

    /// `cookieValues(named:in:)` of this request's `Cookie` header.
    public func cookieValues(named name: String) -> [String] {
        Self.cookieValues(named: name, in: headers["Cookie"])
    }

    /// The media type of the body without parameters, lower-cased ("application/json").
    public var mediaType: String? {
        // Bytes, not characters: grapheme breaking per character cost more than the rest
        // of decoding an edit's form.
        headers["Content-Type"]?.asciiTrimmedLowercased(upTo: UInt8(ascii: ";"))
    }

    /// Whether `mediaType` is `expected` (lower-case), compared in place: every edit asks.
    public func hasMediaType(_ expected: String) -> Bool {
        headers["Content-Type"]?.asciiTrimmedLowercased(upTo: UInt8(ascii: ";"), equals: expected) ?? false
    }
}


/// A `Set-Cookie` value (RFC 6265 §4.1), always `HttpOnly`, in one attribute order, so every
/// cookie the server sets is written the same way.
public struct SetCookie: Sendable {
    public enum SameSite: String, Sendable {
        case strict = "Strict"
        case lax = "Lax"
    }

    public var name: String
    public var value: String
    public var path: String
    public var maxAge: Int
    public var sameSite: SameSite
    public var domain: String?
    public var secure: Bool

    public init(_ name: String, _ value: String, path: String, maxAge: Int, sameSite: SameSite, domain: String? = nil,
                secure: Bool) {
        self.name = name
        self.value = value
        self.path = path
        self.maxAge = maxAge
        self.sameSite = sameSite
        self.domain = domain
        self.secure = secure
    }

    /// The same cookie emptied and expired: how a browser is told to forget it.
    public var cleared: SetCookie {
        var cleared = self
        cleared.value = ""
        cleared.maxAge = 0
        return cleared
    }

    public var header: String {
        "\(name)=\(value); Path=\(path); Max-Age=\(maxAge); HttpOnly; SameSite=\(sameSite.rawValue)"
            + (domain.map { "; Domain=\($0)" } ?? "") + (secure ? "; Secure" : "")
    }
}
