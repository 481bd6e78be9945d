import Foundation

/// An origin as browsers send it in `Origin` (RFC 6454): scheme and host in lower case, the
/// port only when it is not the scheme's default, nothing after. `--public-origin` and
/// `--return-to-allow` values are compared in this form, so `https://Signup.example.com:443/`
/// matches what a browser sends, and anything with a path, query, fragment or user is refused
/// at start rather than silently never matching.
public enum SiteOrigin {
    /// The normalized origin, or why `text` is not one.
    public static func normalized(_ text: String) -> Result<String, OriginProblem> {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = url.host?.lowercased(), !host.isEmpty, text.lowercased().hasPrefix(scheme + "://")
        else { return .failure(OriginProblem("'\(text)' is not an origin like https://signup.example.com")) }
        guard url.user == nil, url.password == nil, url.query == nil, url.fragment == nil,
              url.path.isEmpty || url.path == "/" else {
            return .failure(OriginProblem("'\(text)' has more than scheme, host and port (an origin has no path, query or user)"))
        }
        let defaultPort = scheme == "https" ? 443 : 80
        let port = url.port.map { $0 == defaultPort ? "" : ":\($0)" } ?? ""
        return .success("\(scheme)://\(host)\(port)")
    }

    public struct OriginProblem: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }
}
