import Crypto
import Foundation
import FormWire
import SignupDomain
import WebKernel

/// What keeps a second factor's secrets out of the store's reach (issue 44): the TOTP secret
/// is sealed with ChaCha20-Poly1305 under a key that can live outside the database
/// (`LIVESIGNUP_SECOND_FACTOR_KEY`), bound to its account (a sealed secret copied to another
/// account's row does not open), and recovery codes are kept as HMACs under the same key. A
/// copy of the database alone yields neither.
public struct SecondFactorSeal: Sendable {
    /// The key's bytes (a `SymmetricKey` is made per use: it is not `Sendable`).
    private let keyBytes: [UInt8]
    private var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    /// `key`: 32 bytes.
    package init(key: [UInt8]) {
        precondition(key.count == 32, "a second factor's sealing key is 32 bytes")
        keyBytes = key
    }

    /// The key given as 64 hex digits or as base64 of 32 bytes; nil for anything else.
    public static func key(from text: String) -> [UInt8]? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.count == 64, let bytes = Hex.decode(Substring(trimmed)) { return bytes }
        if let data = Data(base64Encoded: trimmed), data.count == 32 { return Array(data) }
        return nil
    }

    package static func makeKey() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    private static func binding(_ account: Int64) -> Data { Data("livesignup second factor \(account)".utf8) }

    package func seal(_ secret: [UInt8], account: Int64) throws -> [UInt8] {
        Array(try ChaChaPoly.seal(secret, using: key, authenticating: Self.binding(account)).combined)
    }

    /// Throws for a secret sealed under another key, for another account, or altered.
    package func open(_ sealed: [UInt8], account: Int64) throws -> [UInt8] {
        Array(try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: sealed), using: key, authenticating: Self.binding(account)))
    }

    /// Ten recovery codes, each eight characters of base32 (40 random bits) shown as
    /// "abcd-efgh": typed case-insensitively, with or without the hyphen.
    package static func makeRecoveryCodes(count: Int = 10) -> [String] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in
            let code = Base32.encode((0..<5).map { _ in UInt8.random(in: .min ... .max, using: &generator) }).lowercased()
            return code.prefix(4) + "-" + code.suffix(4)
        }
    }

    /// A recovery code as stored: an HMAC of the code as typed without case, spaces or
    /// hyphens, bound to its account.
    package func recoveryCodeHash(_ typed: String, account: Int64) -> String {
        let normalized = typed.lowercased().filter { $0 != "-" && !$0.isWhitespace }
        let mac = HMAC<SHA256>.authenticationCode(for: Data("recovery code \(account) \(normalized)".utf8), using: key)
        return Hex.encode(Array(mac))
    }

    /// The second step of a sign-in (issue 44), between a right password and a right code:
    /// a token naming the account, when the password was right and where to go after, signed
    /// under this key. It travels in a cookie that only `/signin` reads, so any instance
    /// sharing the key takes it and nothing is stored for it.
    package struct SecondStep: Sendable, Equatable {
        package let account: Int64
        package let issuedAt: Date
        package let returnTo: String?

        package init(account: Int64, issuedAt: Date, returnTo: String?) {
            self.account = account
            self.issuedAt = issuedAt
            self.returnTo = returnTo
        }
    }

    package func stepToken(_ step: SecondStep) -> String {
        let body = "\(step.account).\(Int64(step.issuedAt.timeIntervalSince1970)).\(Hex.encode(Array((step.returnTo ?? "").utf8)))"
        return body + "." + Hex.encode(Array(HMAC<SHA256>.authenticationCode(for: Data("second step \(body)".utf8), using: key)))
    }

    /// The step a token names, if it is ours, whole and not older than `lifetime`.
    package func openStepToken(_ token: String, now: Date, lifetime: TimeInterval) -> SecondStep? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard token.utf8.count <= 4096, parts.count == 4, let mac = Hex.decode(parts[3]),
              HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Data("second step \(parts[0...2].joined(separator: "."))".utf8),
                                                     using: key),
              let account = Int64(parts[0]), let issued = Int64(parts[1]), let target = Hex.decode(parts[2]) else { return nil }
        let issuedAt = Date(timeIntervalSince1970: TimeInterval(issued))
        guard now.timeIntervalSince(issuedAt) < lifetime, issuedAt <= now.addingTimeInterval(5) else { return nil }
        let returnTo = String(decoding: target, as: UTF8.self)
        return SecondStep(account: account, issuedAt: issuedAt, returnTo: returnTo.isEmpty ? nil : returnTo)
    }
}
