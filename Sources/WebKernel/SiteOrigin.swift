import Foundation

/// An origin as browsers send it in `Origin` (RFC 6454): scheme and host in lower case, the
/// port only when it is not the scheme's default, nothing after. `--public-origin` and
/// `--return-to-allow` values are compared in this form, so `https://Signup.example.com:443/`
/// matches what a browser sends, and anything with a path, query, fragment or user is refused
/// at start rather than silently never matching.
public enum SiteOrigin {
    /// The origin of an absolute http(s) URL as browsers name it, with the URL's parts; nil
    /// for anything else (no host, a user or password, another scheme, not `scheme://`).
    package static func of(_ text: String) -> (origin: String, url: URLComponents)? {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = url.host?.lowercased(), !host.isEmpty, url.user == nil, url.password == nil,
              text.lowercased().hasPrefix(scheme + "://")
        else { return nil }
        // A port browsers would refuse (over 65535) is no origin: Foundation reads it as no
        // port at all, which made "https://site:4430000…" pass for this site (found by fuzzing).
        // Read on the text's own bytes: Foundation's ranges are nil once it percent-encoded
        // anything (a non-ASCII query), which let the same port through again (found by the
        // fuzz check in CI).
        if hasPort(afterScheme: text.utf8.dropFirst(scheme.utf8.count + 3)) {
            guard let port = url.port, (0...65535).contains(port) else { return nil }
        }
        let defaultPort = scheme == "https" ? 443 : 80
        return ("\(scheme)://\(host)" + (url.port.map { $0 == defaultPort ? "" : ":\($0)" } ?? ""), url)
    }

    /// Whether the authority (up to the first '/', '?' or '#') names a port: a ':' after the
    /// host, past an IPv6 literal's ']'.
    private static func hasPort(afterScheme rest: Substring.UTF8View) -> Bool {
        let authority = rest.prefix { !"/?#".utf8.contains($0) }
        let host = authority.lastIndex(of: UInt8(ascii: "]")).map { authority[$0...] } ?? authority[...]
        return host.contains(UInt8(ascii: ":"))
    }

    /// The normalized origin, or why `text` is not one.
    public static func normalized(_ text: String) -> Result<String, OriginProblem> {
        guard let (origin, url) = of(text) else {
            return .failure(OriginProblem("'\(text)' is not an origin like https://signup.example.com"))
        }
        guard url.query == nil, url.fragment == nil, url.path.isEmpty || url.path == "/" else {
            return .failure(OriginProblem("'\(text)' has more than scheme, host and port (an origin has no path or query)"))
        }
        return .success(origin)
    }

    /// Every value normalized, or a configuration error naming `setting` and the value.
    package static func normalized(_ values: [String], setting: String) throws(ConfigurationError) -> [String] {
        var origins: [String] = []
        for value in values {
            switch normalized(value) {
            case .success(let origin): origins.append(origin)
            case .failure(let problem): throw ConfigurationError("\(setting): \(problem).")
            }
        }
        return origins
    }

    public struct OriginProblem: Error, CustomStringConvertible {
        public let description: String
        package init(_ description: String) { self.description = description }
    }
}
