import CBORDecoder
import Crypto
import _CryptoExtras
import Foundation

/// Why a WebAuthn response is refused: one reason a log names and a page can explain.
public struct WebAuthnError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A short stable label (metrics, logs): e.g. "unsupported_algorithm", "bad_signature".
    public let code: String
    public let detail: String
    public var description: String { "\(code): \(detail)" }

    public init(_ code: String, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// Every code the checks here use (a fixed set, e.g. for a metric's labels).
    public static let codes = ["malformed", "wrong_type", "wrong_challenge", "wrong_origin", "bad_client_data", "wrong_rp_id",
                               "user_not_present", "user_not_verified", "bad_attestation", "bad_signature", "sign_count",
                               "unknown_credential", "wrong_user", "unsupported_algorithm", "bad_key",
                               "bad_authenticator_data", "missing_user_handle"]
}

/// A credential public key in COSE form (RFC 9052/9053, as WebAuthn carries it), for the
/// algorithms LiveSignup accepts: ES256 (P-256, -7), EdDSA (Ed25519, -8) and RS256 (-257).
/// Signatures are checked with swift-crypto.
public struct COSEKey: Sendable {
    public enum Algorithm: Int, Sendable, CaseIterable {
        case es256 = -7
        case edDSA = -8
        case rs256 = -257
    }

    public let algorithm: Algorithm
    /// The key's CBOR as it came: what is stored with the account.
    public let encoded: [UInt8]
    /// The key's numbers, checked at init; swift-crypto's key types are not Sendable, so they
    /// are made again for each check (cheap next to the signature).
    private enum Material: Sendable {
        case p256(xy: [UInt8])
        case ed25519(x: [UInt8])
        case rsa(n: [UInt8], e: [UInt8])
    }

    private let material: Material

    /// Reads a COSE key from its CBOR bytes.
    /// - Throws: `WebAuthnError` "bad_key" for a key that is not a COSE key of its kind, or
    ///   "unsupported_algorithm" for an algorithm this server does not accept.
    public init(cbor bytes: [UInt8]) throws(WebAuthnError) {
        let map: CBORValue
        do {
            map = try CBORValue.decode(bytes)
        } catch {
            throw WebAuthnError("bad_key", "the public key is not CBOR: \(error)")
        }
        try self.init(map, encoded: bytes)
    }

    init(_ map: CBORValue, encoded: [UInt8]) throws(WebAuthnError) {
        guard case .map = map, let keyType = map[1]?.int, let number = map[3]?.int else {
            throw WebAuthnError("bad_key", "the public key is not a COSE key (no kty or alg)")
        }
        guard let algorithm = Algorithm(rawValue: number) else {
            throw WebAuthnError("unsupported_algorithm", "COSE algorithm \(number) is not accepted (ES256, EdDSA and RS256 are)")
        }
        self.algorithm = algorithm
        self.encoded = encoded
        switch algorithm {
        case .es256:
            // EC2 (kty 2) on P-256 (crv 1): x and y, 32 bytes each.
            guard keyType == 2, map[-1]?.int == 1, let x = map[-2]?.byteString, let y = map[-3]?.byteString,
                  x.count == 32, y.count == 32, (try? P256.Signing.PublicKey(rawRepresentation: x + y)) != nil
            else { throw WebAuthnError("bad_key", "not a P-256 EC2 key for ES256") }
            material = .p256(xy: x + y)
        case .edDSA:
            // OKP (kty 1) on Ed25519 (crv 6): x, 32 bytes.
            guard keyType == 1, map[-1]?.int == 6, let x = map[-2]?.byteString, x.count == 32,
                  (try? Curve25519.Signing.PublicKey(rawRepresentation: x)) != nil
            else { throw WebAuthnError("bad_key", "not an Ed25519 OKP key for EdDSA") }
            material = .ed25519(x: x)
        case .rs256:
            // RSA (kty 3): n (-1) and e (-2), at least 2048 bits (swift-crypto's floor).
            guard keyType == 3, let n = map[-1]?.byteString, let e = map[-2]?.byteString,
                  (try? _RSA.Signing.PublicKey(n: n, e: e)) != nil
            else { throw WebAuthnError("bad_key", "not an RSA key of at least 2048 bits for RS256") }
            material = .rsa(n: n, e: e)
        }
    }

    /// Whether `signature` is this key's over `data` (SHA-256 for ES256 and RS256).
    public func isValidSignature(_ signature: [UInt8], for data: [UInt8]) -> Bool {
        switch material {
        case .p256(let xy):
            // WebAuthn's ES256 signatures are ASN.1 DER.
            guard let key = try? P256.Signing.PublicKey(rawRepresentation: xy),
                  let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: data)
        case .ed25519(let x):
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: x) else { return false }
            return key.isValidSignature(signature, for: data)
        case .rsa(let n, let e):
            guard let key = try? _RSA.Signing.PublicKey(n: n, e: e) else { return false }
            return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: data,
                                        padding: .insecurePKCS1v1_5)
        }
    }
}
