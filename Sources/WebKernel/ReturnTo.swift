import Foundation
import MicroHTTPD

/// Where a person goes after signing in or up when they came from the application behind the
/// proxy (`?return_to=URL`): a path on this site, or a URL on this site's origin or one given
/// with `--return-to-allow`. Anything else is ignored and they land on `/welcome`: an open
/// redirect would let anyone send people from this trusted page to a look-alike.
package struct ReturnTo: Sendable {
    /// Origins besides this site's own, lower case ("https://app.example.com").
    package let allowedOrigins: Set<String>
    package let sameOrigin: SameOriginPolicy

    package init(allowedOrigins: Set<String>, sameOrigin: SameOriginPolicy) {
        self.allowedOrigins = allowedOrigins
        self.sameOrigin = sameOrigin
    }

    package static let maximumLength = 2048

    /// The request's `return_to`. As the last query parameter it runs to the end of the
    /// query, so a proxy can append the original URL unencoded, `&`s and all (nginx cannot
    /// percent-encode; `/signin?return_to=$scheme://$http_host$request_uri`).
    package static func requested(in request: HTTPRequest) -> String? {
        guard let index = request.query.firstIndex(where: { $0.name == "return_to" }) else { return nil }
        var value = request.query[index].value
        for (name, rest) in request.query[(index + 1)...] {
            value += "&" + name + (rest.isEmpty ? "" : "=" + rest)
        }
        return value
    }

    /// The request's own `?return_to=`, if it is a safe place to send the person afterwards.
    package func requestedTarget(of request: HTTPRequest) -> String? {
        validated(Self.requested(in: request), for: request)
    }

    /// `raw` if it is a safe place to send the person after signing in from `request`; nil
    /// otherwise.
    package func validated(_ raw: String?, for request: HTTPRequest) -> String? {
        guard let raw, !raw.isEmpty, raw.utf8.count <= Self.maximumLength, Self.isPlain(raw) else { return nil }
        // Decoded (a few times over, for double encoding) it must not turn into a control
        // character, a backslash browsers read as a slash, or a protocol-relative "//host".
        var decoded = raw
        for _ in 0..<3 {
            guard let next = decoded.removingPercentEncoding,
                  !next.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "\\" })
            else { return nil }
            if next == decoded { break }
            decoded = next
        }
        // On bytes: as Characters, "/" followed by a mark that extends it (U+FE0F, U+0301) is
        // not "/", so "//\u{FE0F}evil.example" did not start with "//" here, while a browser
        // reads a protocol-relative URL and drops U+FE0F from the host (found by fuzzing).
        let slash = UInt8(ascii: "/")
        if raw.utf8.first == slash {
            return raw.utf8.starts(with: [slash, slash]) || decoded.utf8.starts(with: [slash, slash]) ? nil : raw
        }
        guard let (origin, _) = SiteOrigin.of(raw) else { return nil }
        let site = Set(sameOrigin.siteOrigins(for: request))
        return site.contains(origin) || allowedOrigins.contains(origin) ? raw : nil
    }

    /// No spaces, control characters or backslashes anywhere.
    private static func isPlain(_ text: String) -> Bool {
        !text.unicodeScalars.contains { $0.value <= 0x20 || $0.value == 0x7F || $0 == "\\" || ($0.value >= 0x80 && $0.properties.isWhitespace) }
    }
}
