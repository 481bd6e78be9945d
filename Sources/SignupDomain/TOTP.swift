import Crypto
import Foundation

/// Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP) in the setting every
/// authenticator app reads: HMAC-SHA-1, 6 digits, 30-second steps (issue 44). The HMAC is
/// swift-crypto's; what is here is the RFC's counter, truncation and window, which the tests
/// hold to the RFC's own vectors and to `oathtool`.
public struct TOTP: Sendable, Equatable {
    /// The shared secret: 20 random bytes (160 bits, RFC 4226's recommendation).
    public let secret: [UInt8]
    public static let digits = 6
    public static let period: TimeInterval = 30
    /// Steps either side of now a code is accepted from: a phone's clock a little off, or a
    /// code typed as its step turned.
    public static let acceptedDrift = 1
    /// Steps either side searched further to tell "your device's clock is off by about N
    /// seconds" from a wrong code (five minutes: a clock further off is a wrong code).
    public static let skewSearch = 10

    public init(secret: [UInt8]) {
        self.secret = secret
    }

    /// A new secret for a new setup.
    public static func makeSecret() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<20).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// The 30-second step `date` falls in (RFC 6238's T, with T0 = 0).
    public static func step(at date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / period).rounded(.down))
    }

    /// The code of one step, `digits` long with leading zeros.
    public func code(atStep step: Int64, digits: Int = TOTP.digits) -> String {
        var counter = UInt64(bitPattern: step).bigEndian
        let message = withUnsafeBytes(of: &counter) { Array($0) }
        let mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: secret)))
        // RFC 4226 §5.3: dynamic truncation.
        let offset = Int(mac[mac.count - 1] & 0x0F)
        let binary = (UInt32(mac[offset] & 0x7F) << 24) | (UInt32(mac[offset + 1]) << 16)
            | (UInt32(mac[offset + 2]) << 8) | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: max(0, digits - value.count)) + value
    }

    /// What a typed code says.
    public enum Match: Sendable, Equatable {
        /// It is the code of `step`, within `acceptedDrift` of now: accept it once.
        case accepted(step: Int64)
        /// It is the code of `step`, further away but within `skewSearch`: the device's clock
        /// is off by about `seconds` (positive: ahead). Never accepted; a step ahead must be
        /// spent by the caller, or the hint would name a code that becomes right later.
        case clockOff(step: Int64, seconds: Int)
        /// No step near now has it.
        case wrong
    }

    /// Judges `typed` (spaces ignored) at `date`: the nearest step first, so a code that is
    /// both (never, in practice) counts as the closer one. Compared in constant time per step.
    public func match(_ typed: String, at date: Date) -> Match {
        let code = typed.filter { !$0.isWhitespace }
        guard code.count == Self.digits, code.allSatisfy(\.isASCII), code.allSatisfy(\.isNumber) else { return .wrong }
        let now = Self.step(at: date)
        for distance in 0...Self.skewSearch {
            for step in distance == 0 ? [now] : [now - Int64(distance), now + Int64(distance)]
                where Self.constantTimeEqual(self.code(atStep: step), code) {
                return distance <= Self.acceptedDrift ? .accepted(step: step) : .clockOff(step: step, seconds: Int(step - now) * Int(Self.period))
            }
        }
        return .wrong
    }

    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let left = Array(a.utf8), right = Array(b.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }

    /// The key as people type it into an app: RFC 4648 base32, no padding, in groups of four.
    public var typedKey: String {
        let key = Base32.encode(secret)
        return stride(from: 0, to: key.count, by: 4).map { start in
            let from = key.index(key.startIndex, offsetBy: start)
            return String(key[from..<(key.index(from, offsetBy: 4, limitedBy: key.endIndex) ?? key.endIndex)])
        }.joined(separator: " ")
    }

    /// The `otpauth://totp/…` URI an app scans (the de facto Key URI Format): the issuer (the
    /// policy's service name) and the account's name as its label.
    public func uri(issuer: String, account: String) -> String {
        func escaped(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
        }
        return "otpauth://totp/\(escaped(issuer)):\(escaped(account))?secret=\(Base32.encode(secret))"
            + "&issuer=\(escaped(issuer))&algorithm=SHA1&digits=\(Self.digits)&period=\(Int(Self.period))"
    }
}

/// RFC 4648 base32 (the alphabet A–Z, 2–7), without padding: how authenticator apps take a key.
public enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 8 + 4) / 5)
        var buffer: UInt32 = 0, bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 0x1F)])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 0x1F)]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// Nil for anything that is not base32 (spaces, case and padding tolerated).
    public static func decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer: UInt32 = 0, bits = 0
        for character in text.uppercased().utf8 where character != UInt8(ascii: " ") && character != UInt8(ascii: "=") {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = (buffer << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                output.append(UInt8((buffer >> UInt32(bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return output
    }
}
