import Identity
import MicroHTTPD

extension FuzzTarget {
    /// The Cookie header, read for the sign-in session (and every other cookie of ours).
    static let cookie = FuzzTarget(
        name: "cookie",
        summary: "Cookie headers: HTTPRequest.cookieValues, SignedInUsers.sessionID"
    ) { input in
        let parts = input.texts(2)
        let name = parts[0], header = parts[1]
        let values = HTTPRequest.cookieValues(named: name, in: header)
        // Read as browsers and proxies read it (RFC 6265 §5.4, byte by byte): the server must
        // see exactly the cookies they send, or a value inside one cookie could pass for another.
        fuzzCheck(values == referenceCookieValues(named: name, in: header),
                  "cookieValues disagrees with a byte-level reading: \(values) for \(Array(header.utf8))")
        for names in [["__Host-livesignup_auth", "livesignup_auth"], ["livesignup_auth"]] {
            if let id = SignedInUsers.sessionID(in: header, names: names) {
                fuzzCheck(id.isRandomToken, "a session id of the wrong shape")
                let sent = names.flatMap { referenceCookieValues(named: $0, in: header) }.filter(\.isRandomToken)
                fuzzCheck(sent == [id], "a session id believed though the header carries \(sent)")
            }
        }
    }

    /// RFC 6265 §5.2/5.4 on bytes: pairs split at ';', spaces and tabs trimmed, the name up to
    /// the first '=' compared byte for byte.
    private static func referenceCookieValues(named name: String, in header: String) -> [String] {
        let bytes = Array(header.utf8), wanted = Array(name.utf8)
        func trimmed(_ piece: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
            var piece = piece
            while let first = piece.first, first == 0x20 || first == 0x09 { piece = piece.dropFirst() }
            while let last = piece.last, last == 0x20 || last == 0x09 { piece = piece.dropLast() }
            return piece
        }
        return bytes.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: true).compactMap { pair in
            let pair = trimmed(pair)
            guard let equals = pair.firstIndex(of: UInt8(ascii: "=")), Array(pair[..<equals]) == wanted else { return nil }
            return String(decoding: pair[(equals + 1)...], as: UTF8.self)
        }
    }
}
