import Foundation
import MicroHTTPD

/// The files of Public/, read once at start-up and served from memory. Only names found
/// there at start-up are served, so no request path can reach outside the folder.
package struct StaticAssets: Sendable {
    package struct Asset: Sendable {
        package let body: [UInt8]
        package let contentType: String
        /// Short content hash: the `?v=` fingerprint and the ETag.
        package let fingerprint: String
    }

    private let assets: [String: Asset]

    package init(directory: URL) throws {
        var assets: [String: Asset] = [:]
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        for name in names where !name.hasPrefix(".") {
            let url = directory.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue
            else { continue }
            let body = [UInt8](try Data(contentsOf: url))
            assets[name] = Asset(body: body, contentType: Self.contentType(for: name),
                                 fingerprint: Self.fingerprint(body))
        }
        self.assets = assets
    }

    /// The URL the page should link: `/static/<name>?v=<fingerprint>`.
    package func url(for name: String) -> String {
        guard let asset = assets[name] else { return "/static/\(name)" }
        return "/static/\(name)?v=\(asset.fingerprint)"
    }

    package func response(for request: HTTPRequest, name: String) -> HTTPResponse? {
        guard let asset = assets[name] else { return nil }
        let etag = "\"\(asset.fingerprint)\""
        var headers = HTTPHeaders()
        headers.add("ETag", etag)
        // Fingerprinted URLs never change content, so browsers may keep them for a year;
        // any other URL must be revalidated.
        headers.add("Cache-Control", request.queryValue("v") == asset.fingerprint
                    ? "public, max-age=31536000, immutable" : "no-cache")
        headers.add("X-Content-Type-Options", "nosniff")
        if request.headers["If-None-Match"] == etag {
            return HTTPResponse(status: .notModified, headers: headers)
        }
        return HTTPResponse(status: .ok, contentType: asset.contentType, body: asset.body, headers: headers)
    }

    package static func contentType(for name: String) -> String {
        switch (name as NSString).pathExtension.lowercased() {
        case "js": return "text/javascript; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "html": return "text/html; charset=utf-8"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "ico": return "image/x-icon"
        case "json": return "application/json"
        case "txt": return "text/plain; charset=utf-8"
        case "woff2": return "font/woff2"
        default: return "application/octet-stream"
        }
    }

    /// FNV-1a 64-bit: a cheap, stable cache-busting fingerprint (not a security measure).
    package static func fingerprint(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
