/// Percent-decoding of a request path, done here rather than by libmicrohttpd, whose
/// C-string unescaping stops at an encoded NUL ("/static/app.js%00" would become
/// "/static/app.js"). Here "%00" stays a NUL character, so such a path matches no route.
enum PercentDecoding {
    static func decode(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        let bytes = Array(text.utf8)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = URLEncodedForm.hexValue(bytes[index + 1]), let low = URLEncodedForm.hexValue(bytes[index + 2]) {
                decoded.append(high << 4 | low)
                index += 3
            } else {
                // A lone "%" or a bad escape is kept as it was sent.
                decoded.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: decoded, as: UTF8.self)
    }
}
