import MicroHTTPD

/// Refuses state-changing requests a browser sends on behalf of another site (login CSRF,
/// sign-ups from someone else's page). Browsers mark every POST with `Origin` and, today,
/// with `Sec-Fetch-Site`; programs that send neither (curl, the client library) are not
/// browsers acting for someone else and are let through.
package struct SameOriginPolicy: Sendable {
    /// The origins the site is served under (`--public-origin`, e.g.
    /// "https://signup.example.com"), normalized. When there are any, they are this site and
    /// nothing a request says can add to them: `Host` and `X-Forwarded-Host` are the client's
    /// to choose (a proxy passes them on unless told not to).
    package let publicOrigins: [String]
    package let addresses: ClientAddressResolver

    package init(publicOrigins: [String], addresses: ClientAddressResolver) {
        self.publicOrigins = publicOrigins
        self.addresses = addresses
    }

    package enum Verdict: Equatable {
        case allowed
        case refused(reason: String)
    }

    package func check(_ request: HTTPRequest) -> Verdict {
        if let origin = request.headers["Origin"]?.lowercased() {
            // A page served with `Referrer-Policy: no-referrer` (`/verify`) makes the browser
            // send `Origin: null` with its form posts (Fetch, "serializing a request origin");
            // `Sec-Fetch-Site`, which no script can set, still says where the post came from.
            if origin == "null", request.headers["Sec-Fetch-Site"]?.lowercased() == "same-origin" { return .allowed }
            // Otherwise "null" comes from sandboxed frames, data: URLs and cross-origin
            // redirects (whose Sec-Fetch-Site is cross-site).
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

    /// This site, as browsers name it: the configured public origins when there are any;
    /// otherwise the request's own origin (as its Host names it; scheme and host as a trusted
    /// proxy forwarded them).
    package func siteOrigins(for request: HTTPRequest) -> [String] {
        guard publicOrigins.isEmpty else { return publicOrigins }
        var origins: [String] = []
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
