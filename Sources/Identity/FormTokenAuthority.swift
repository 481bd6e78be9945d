import CSodium
import Foundation
import SignupDomain
import WebKernel

/// Form tokens that prove themselves, so a page view costs the server no memory until it
/// opens a stream or sends an edit. A token is the minting instance's id, a dot, and 56
/// lowercase hex digits: 8 random bytes, the issue time (seconds since 1970, 4 bytes) and
/// the first 16 bytes of HMAC-SHA-256 over the instance id and both under the server's key.
/// Any process holding the key accepts the token for a plain (no-JavaScript) post, however
/// long the page was open and whichever instance served it; the instance id in clear text
/// lets a proxy send a live form's stream and edits to the instance that holds its session.
package struct FormTokenAuthority: Sendable {
    /// The hex part's length.
    package static let signedLength = 56
    package static let keyLength = Int(crypto_auth_hmacsha256_KEYBYTES)
    private static let payloadLength = 12
    private static let macLength = 16
    private static let sodiumIsReady: Bool = sodium_init() >= 0

    /// A genuine token's parts.
    package struct Issue: Equatable {
        package var instance: String
        package var date: Date
    }

    private let key: [UInt8]
    /// The id of the instance minting tokens (see `InstanceID`).
    package let instance: String

    package init(key: [UInt8], instance: String) {
        precondition(key.count == Self.keyLength, "the token key must be \(Self.keyLength) bytes")
        precondition(Self.sodiumIsReady, "libsodium could not be initialised")
        precondition(InstanceID.isValid(instance), "instance ids are checked before they get here")
        self.key = key
        self.instance = instance
    }

    /// A fresh random key.
    package static func makeKey() -> [UInt8] {
        precondition(sodiumIsReady, "libsodium could not be initialised")
        var key = [UInt8](repeating: 0, count: keyLength)
        crypto_auth_hmacsha256_keygen(&key)
        return key
    }

    package func mint(issuedAt date: Date) -> String {
        var payload = [UInt8](repeating: 0, count: Self.payloadLength)
        randombytes_buf(&payload, 8)
        let seconds = UInt32(clamping: Int64(date.timeIntervalSince1970))
        for index in 0..<4 { payload[8 + index] = UInt8(truncatingIfNeeded: seconds >> (24 - 8 * index)) }
        return instance + "." + Hex.encode(payload + mac(payload, instance: instance))
    }

    /// Who issued a genuine token, and when; nil for anything this key did not mint.
    package func issue(of token: String) -> Issue? {
        let utf8 = token.utf8
        guard utf8.count <= InstanceID.maximumLength + 1 + Self.signedLength,
              let dot = utf8.lastIndex(of: UInt8(ascii: ".")) else { return nil }
        // Cut on bytes: stepping over the dot by Character would also step over a combining
        // mark written after it, and "web1.\u{301}…" would pass as a second spelling of one
        // token, with its own session and limits (found by fuzzing).
        let instance = String(token[..<dot])
        let signed = token[utf8.index(after: dot)...]
        guard InstanceID.isValid(instance), signed.utf8.count == Self.signedLength,
              let bytes = Hex.decode(signed) else { return nil }
        let payload = Array(bytes[0..<Self.payloadLength])
        let expected = mac(payload, instance: instance)
        let given = Array(bytes[Self.payloadLength...])
        // Constant time, so the comparison does not leak how much of a forgery was right.
        guard sodium_memcmp(expected, given, Self.macLength) == 0 else { return nil }
        let seconds = payload[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return Issue(instance: instance, date: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// The instance id is signed too (NUL-separated from the payload), so a token cannot be
    /// moved to another instance's name by editing its prefix.
    private func mac(_ payload: [UInt8], instance: String) -> [UInt8] {
        let message = Array(instance.utf8) + [0] + payload
        var out = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_BYTES))
        crypto_auth_hmacsha256(&out, message, UInt64(message.count), key)
        return Array(out.prefix(Self.macLength))
    }
}
