import Crypto
import Foundation
import MicroHTTPD
import SignupDomain
import WebAuthn
import WebKernel

/// Why a passkey ceremony was refused: the reason's code (the log, the metric's `result`, the
/// JSON's `reason`), the status, and the catalog text the person reads.
package struct PasskeyRefusal: Error, Sendable {
    package let reason: String
    package let status: HTTPStatus
    /// A key of the text catalog.
    package let text: String
    /// What exactly was wrong, for the log (never shown: it may help an attacker).
    package let detail: String

    package init(reason: String, status: HTTPStatus, text: String, detail: String) {
        self.reason = reason
        self.status = status
        self.text = text
        self.detail = detail
    }

    package static func malformed(_ detail: String) -> PasskeyRefusal {
        PasskeyRefusal(reason: "malformed", status: .badRequest, text: "passkey.error.refused", detail: detail)
    }

    package static func expired(_ detail: String) -> PasskeyRefusal {
        PasskeyRefusal(reason: "expired", status: .conflict, text: "passkey.error.expired", detail: detail)
    }

    /// The credential id is another passkey's already.
    package static let exists = PasskeyRefusal(reason: "exists", status: .conflict, text: "passkey.error.exists",
                                       detail: "the credential id is stored already")

    /// A check of WebAuthn's ceremony failed; `text` is what the person reads.
    package static func verification(_ error: WebAuthnError, text: String, status: HTTPStatus) -> PasskeyRefusal {
        PasskeyRefusal(reason: error.code, status: status, text: text, detail: error.detail)
    }

    /// Every reason there is: the metric's label values (a fixed set).
    package static let reasons = ["expired", "replayed", "forged", "exists", "unavailable", "username_first", "signed_out", "other_browser", "disabled"]
        + WebAuthnError.codes
}

/// Challenges for the ceremonies that have no form session (signing in, adding a passkey to
/// an account): signed by the server, so any instance behind a proxy checks them, bound to
/// what they are for, short-lived, and spent once through the store (the table proofs of work
/// use), so a response cannot be replayed on this instance or another.
///
/// A challenge is 56 bytes: 16 random, the expiry (8, big-endian Unix seconds), and the first
/// 32 of HMAC-SHA-256(key, purpose ‖ 0 ‖ random ‖ expiry).
package struct PasskeyChallenges: Sendable {
    package static let keyLength = 32
    package static let length = 56
    /// Bytes, not a `SymmetricKey` (which is not Sendable): made into one per use.
    package let key: [UInt8]
    package let store: any AccountStore
    /// How long a ceremony may take (WebAuthn's `timeout` says the same to the browser).
    package let lifetime: TimeInterval
    package let now: @Sendable () -> Date

    package init(key: [UInt8], store: any AccountStore, lifetime: TimeInterval, now: @escaping @Sendable () -> Date) {
        self.key = key
        self.store = store
        self.lifetime = lifetime
        self.now = now
    }

    package static func makeKey() -> [UInt8] { (0..<keyLength).map { _ in UInt8.random(in: .min ... .max) } }

    package func make(for purpose: String) -> [UInt8] {
        let random = (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        let expiry = UInt64(max(0, now().addingTimeInterval(lifetime).timeIntervalSince1970.rounded(.up)))
        let body = random + withUnsafeBytes(of: expiry.bigEndian, Array.init)
        return body + mac(body, purpose: purpose)
    }

    /// Checks that `challenge` is one of ours, for `purpose`, not expired, and spends it.
    package func spend(_ challenge: [UInt8], for purpose: String) throws(PasskeyRefusal) {
        _ = try spend(challenge, forOneOf: [purpose])
    }

    /// The same for a challenge made for one of `purposes`; returns which.
    package func spend(_ challenge: [UInt8], forOneOf purposes: [String]) throws(PasskeyRefusal) -> String {
        guard challenge.count == Self.length else {
            throw PasskeyRefusal(reason: "forged", status: .unauthorized, text: "passkey.error.refused",
                                 detail: "a challenge of \(challenge.count) bytes")
        }
        let body = Array(challenge[0..<24])
        guard let purpose = purposes.first(where: { constantTimeEqual(mac(body, purpose: $0), Array(challenge[24...])) }) else {
            throw PasskeyRefusal(reason: "forged", status: .unauthorized, text: "passkey.error.refused",
                                 detail: "a challenge this server did not sign for \(purposes.joined(separator: " or "))")
        }
        let expiry = body[16..<24].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let expiresAt = Date(timeIntervalSince1970: TimeInterval(expiry))
        guard expiresAt > now() else { throw .expired("the challenge expired at \(expiresAt)") }
        let spent: Bool
        do {
            spent = try store.spendProof("passkey:" + Base64URL.encode(challenge), until: expiresAt)
        } catch {
            throw PasskeyRefusal(reason: "unavailable", status: .serviceUnavailable, text: "signin.unavailable",
                                 detail: "the store could not record the challenge as used: \(error)")
        }
        guard spent else {
            throw PasskeyRefusal(reason: "replayed", status: .conflict, text: "passkey.error.expired",
                                 detail: "the challenge was used already")
        }
        return purpose
    }

    private func mac(_ body: [UInt8], purpose: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array(purpose.utf8) + [0] + body, using: SymmetricKey(data: key)))
    }

    private func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
