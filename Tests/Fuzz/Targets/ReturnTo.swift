import MicroHTTPD
import WebKernel

private let site = "https://signup.example.com", application = "https://app.example.com"
private let returnTo = ReturnTo(allowedOrigins: [application],
                                sameOrigin: SameOriginPolicy(publicOrigins: [site], addresses: ClientAddressResolver()))

extension FuzzTarget {
    /// `?return_to=`: where a person is sent after signing in. An open redirect here would let
    /// anyone send people from this trusted page to a look-alike.
    static let returnTarget = FuzzTarget(
        name: "return-to",
        summary: "?return_to= targets and Origin checks: ReturnTo.validated, SameOriginPolicy.check"
    ) { input in
        let parts = input.texts(3)
        let raw = parts[0]
        let request = HTTPRequest(method: "POST", path: "/signin", query: [("return_to", raw)],
                                  headers: HTTPHeaders([("Host", "signup.example.com"), ("Origin", parts[1]),
                                                        ("Sec-Fetch-Site", parts[2])]))
        if let target = returnTo.validated(raw, for: request) {
            fuzzCheck(target == raw, "a target changed on its way through")
            fuzzCheck(target.utf8.count <= ReturnTo.maximumLength, "a target over the length limit")
            fuzzCheck(!target.unicodeScalars.contains { $0.value <= 0x20 || $0.value == 0x7F || $0 == "\\" || $0.properties.isWhitespace },
                      "a target with a space, control character or backslash: unsafe in a Location header")
            // On bytes, as a browser reads a URL: a Character "/" with a mark on it is still '/'.
            if target.utf8.first == UInt8(ascii: "/") {
                fuzzCheck(!target.utf8.starts(with: "//".utf8), "a protocol-relative target: \(Array(target.utf8))")
                var decoded = target
                for _ in 0..<3 { decoded = decoded.removingPercentEncoding ?? decoded }
                fuzzCheck(!decoded.utf8.starts(with: "//".utf8), "a target that decodes to a protocol-relative one")
            } else {
                // Read as a browser reads the authority, byte by byte: this site or the one
                // allowed application, and nothing after the host but a path, query or fragment.
                let lower = Array(target.utf8).map { (65...90).contains($0) ? $0 + 32 : $0 }
                let sameSite = [site, application].contains { origin in
                    guard lower.starts(with: origin.utf8) else { return false }
                    var rest = lower.dropFirst(origin.utf8.count)
                    if rest.first == UInt8(ascii: ":") {
                        // A port, empty or with leading zeros, is the default one or another site.
                        let digits = rest.dropFirst().prefix { (48...57).contains($0) }
                        guard digits.isEmpty || Int(String(decoding: digits, as: UTF8.self)) == 443 else { return false }
                        rest = rest.dropFirst(1 + digits.count)
                    }
                    return rest.first.map { "/?#".utf8.contains($0) } ?? true
                }
                fuzzCheck(sameSite, "an absolute target off the site: \(target)")
            }
        }
        if case .allowed = returnTo.sameOrigin.check(request) {
            let origin = parts[1].lowercased(), fetchSite = parts[2].lowercased()
            fuzzCheck(origin == site || (origin == "null" || origin.isEmpty) && fetchSite != "cross-site",
                      "a request allowed from origin \(parts[1]) (Sec-Fetch-Site \(parts[2]))")
        }
    }
}
