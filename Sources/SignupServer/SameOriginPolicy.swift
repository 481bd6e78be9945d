import MicroHTTPD

/// Refuses state-changing requests a browser sends on behalf of another site (login CSRF,
/// sign-ups from someone else's page). Browsers mark every POST with `Origin` and, today,
/// with `Sec-Fetch-Site`; programs that send neither (curl, the client library) are not
/// browsers acting for someone else and are let through.
struct SameOriginPolicy: Sendable {
    /// Origins the site is served under besides the one the request names (e.g.
    /// "https://signup.example.com" behind a TLS-terminating proxy).
    let publicOrigins: [String]
    let addresses: ClientAddressResolver

    enum Verdict: Equatable {
        case allowed
        case refused(reason: String)
    }

    func check(_ request: HTTPRequest) -> Verdict {
        if let origin = request.headers["Origin"]?.lowercased() {
            // "null" comes from sandboxed frames, data: URLs and cross-origin redirects.
            guard origin != "null", siteOrigins(for: request).contains(origin) else {
                return .refused(reason: "origin \(origin)")
            }
            return .allowed
        }
        switch request.headers["Sec-Fetch-Site"]?.lowercased() {
        case "cross-site", "same-site": return .refused(reason: "Sec-Fetch-Site without a matching Origin")
        default: return .allowed
        }
    }

    /// The request's own origin (as its Host names it; scheme and host as a trusted proxy
    /// forwarded them), plus the configured public origins: this site, as browsers name it.
    func siteOrigins(for request: HTTPRequest) -> [String] {
        var origins = publicOrigins.map { $0.lowercased() }
        let fromProxy = addresses.isTrusted(request.remoteAddress)
        let scheme = (fromProxy ? request.headers["X-Forwarded-Proto"] : nil)?.lowercased() ?? "http"
        let host = (fromProxy ? request.headers["X-Forwarded-Host"] : nil) ?? request.headers["Host"]
        if let host {
            let host = host.lowercased()
            origins.append("\(scheme)://\(host)")
            // Browsers leave the default port out of Origin; some clients put it in Host.
            if scheme == "http", host.hasSuffix(":80") { origins.append("http://\(host.dropLast(3))") }
            if scheme == "https", host.hasSuffix(":443") { origins.append("https://\(host.dropLast(4))") }
        }
        return origins
    }
}
