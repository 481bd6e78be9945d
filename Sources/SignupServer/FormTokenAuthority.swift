import CSodium
import Foundation

/// Form tokens that prove themselves, so a page view costs the server no memory until it
/// opens a stream or sends an edit: 8 random bytes, the issue time (seconds since 1970,
/// 4 bytes) and the first 16 bytes of HMAC-SHA-256 over both under the server's key, as
/// 56 lowercase hex digits. Any process holding the key accepts the token, so a plain
/// (no-JavaScript) post works after a restart, however long the page was open.
struct FormTokenAuthority: Sendable {
    static let length = 56
    static let keyLength = Int(crypto_auth_hmacsha256_KEYBYTES)
    private static let payloadLength = 12
    private static let macLength = 16
    private static let sodiumIsReady: Bool = sodium_init() >= 0

    private let key: [UInt8]

    init(key: [UInt8]) {
        precondition(key.count == Self.keyLength, "the token key must be \(Self.keyLength) bytes")
        precondition(Self.sodiumIsReady, "libsodium could not be initialised")
        self.key = key
    }

    /// A fresh random key.
    static func makeKey() -> [UInt8] {
        precondition(sodiumIsReady, "libsodium could not be initialised")
        var key = [UInt8](repeating: 0, count: keyLength)
        crypto_auth_hmacsha256_keygen(&key)
        return key
    }

    func mint(issuedAt date: Date) -> String {
        var payload = [UInt8](repeating: 0, count: Self.payloadLength)
        randombytes_buf(&payload, 8)
        let seconds = UInt32(clamping: Int64(date.timeIntervalSince1970))
        for index in 0..<4 { payload[8 + index] = UInt8(truncatingIfNeeded: seconds >> (24 - 8 * index)) }
        return Self.hex(payload + mac(payload))
    }

    /// When a genuine token was issued; nil for anything this key did not mint.
    func issueDate(of token: String) -> Date? {
        guard token.utf8.count == Self.length, let bytes = Self.bytes(fromHex: token) else { return nil }
        let payload = Array(bytes[0..<Self.payloadLength])
        let expected = mac(payload)
        let given = Array(bytes[Self.payloadLength...])
        // Constant time, so the comparison does not leak how much of a forgery was right.
        guard sodium_memcmp(expected, given, Self.macLength) == 0 else { return nil }
        let seconds = payload[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private func mac(_ payload: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_BYTES))
        crypto_auth_hmacsha256(&out, payload, UInt64(payload.count), key)
        return Array(out.prefix(Self.macLength))
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Lowercase hex only: the tokens this authority mints, nothing looser.
    private static func bytes(fromHex text: String) -> [UInt8]? {
        var result = [UInt8]()
        result.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        for character in text.utf8 {
            let value: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            default: return nil
            }
            if let first = high {
                result.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return high == nil ? result : nil
    }
}
