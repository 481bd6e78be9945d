import CBORDecoder
import Crypto
import _CryptoExtras
import Foundation
import WebAuthn
import XCTest

/// The pieces a passkey is checked with: COSE keys of the accepted algorithms read from their
/// CBOR, signatures checked with swift-crypto (a flipped bit refused), and authenticator data
/// read strictly. The CBOR here is written by hand from RFC 9053's labels; the browser tests
/// check real authenticators' output against py_webauthn.
final class WebAuthnPiecesTests: XCTestCase {
    /// A CBOR byte string's header and bytes (lengths up to 65535).
    private func byteString(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.count < 24 { return [0x40 | UInt8(bytes.count)] + bytes }
        if bytes.count < 256 { return [0x58, UInt8(bytes.count)] + bytes }
        return [0x59, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
    }

    private func es256Key(_ key: P256.Signing.PublicKey) -> [UInt8] {
        let raw = Array(key.rawRepresentation)
        // {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}
        return [0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21] + byteString(Array(raw[0..<32]))
            + [0x22] + byteString(Array(raw[32..<64]))
    }

    func testAnES256KeyChecksItsSignaturesAndRefusesAFlippedBit() throws {
        let privateKey = P256.Signing.PrivateKey()
        let key = try COSEKey(cbor: es256Key(privateKey.publicKey))
        XCTAssertEqual(key.algorithm, .es256)
        let data = Array("authenticator data and client data hash".utf8)
        var signature = Array(try privateKey.signature(for: data).derRepresentation)
        XCTAssertTrue(key.isValidSignature(signature, for: data))
        signature[signature.count - 1] ^= 0x01
        XCTAssertFalse(key.isValidSignature(signature, for: data), "a flipped bit")
        XCTAssertFalse(key.isValidSignature(Array(try privateKey.signature(for: data).rawRepresentation), for: data),
                       "WebAuthn's ES256 signatures are DER, not raw")
    }

    func testAnEd25519KeyChecksItsSignatures() throws {
        let privateKey = Curve25519.Signing.PrivateKey()
        // {1: 1 (OKP), 3: -8 (EdDSA), -1: 6 (Ed25519), -2: x}
        let cose: [UInt8] = [0xA4, 0x01, 0x01, 0x03, 0x27, 0x20, 0x06, 0x21] + byteString(Array(privateKey.publicKey.rawRepresentation))
        let key = try COSEKey(cbor: cose)
        XCTAssertEqual(key.algorithm, .edDSA)
        let data = Array("signed".utf8)
        var signature = Array(try privateKey.signature(for: data))
        XCTAssertTrue(key.isValidSignature(signature, for: data))
        signature[0] ^= 0x80
        XCTAssertFalse(key.isValidSignature(signature, for: data))
    }

    func testAnRS256KeyChecksItsSignatures() throws {
        let privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let primitives = try privateKey.publicKey.getKeyPrimitives()
        // {1: 3 (RSA), 3: -257 (RS256), -1: n, -2: e}
        let cose: [UInt8] = [0xA4, 0x01, 0x03, 0x03, 0x39, 0x01, 0x00, 0x20] + byteString(Array(primitives.modulus))
            + [0x21] + byteString(Array(primitives.publicExponent))
        let key = try COSEKey(cbor: cose)
        XCTAssertEqual(key.algorithm, .rs256)
        let data = Array("signed".utf8)
        let signature = Array(try privateKey.signature(for: data, padding: .insecurePKCS1v1_5).rawRepresentation)
        XCTAssertTrue(key.isValidSignature(signature, for: data))
        XCTAssertFalse(key.isValidSignature(signature, for: data + [0]))
    }

    func testKeysOfOtherAlgorithmsOrShapesAreRefusedWithTheirReason() {
        func code(_ bytes: [UInt8]) -> String {
            do {
                _ = try COSEKey(cbor: bytes)
                return "accepted"
            } catch {
                return listed(error)
            }
        }
        // ES384 (-35): {1: 2, 3: -35, -1: 2, ...}
        XCTAssertEqual(code([0xA3, 0x01, 0x02, 0x03, 0x38, 0x22, 0x20, 0x02]), "unsupported_algorithm")
        XCTAssertEqual(code([0xA1, 0x01, 0x02]), "bad_key", "no algorithm")
        XCTAssertEqual(code([0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x41, 0x00, 0x22, 0x41, 0x00]), "bad_key",
                       "coordinates of the wrong size")
        XCTAssertEqual(code([0x82, 0x01, 0x02]), "bad_key", "not a map")
        XCTAssertEqual(code([0xA5, 0x01]), "bad_key", "cut short")
    }

    func testAuthenticatorDataIsReadStrictly() throws {
        let rpIDHash = Array(SHA256.hash(data: Array("localhost".utf8)))
        let credentialID = (0..<16).map { UInt8($0) }
        let cose = es256Key(P256.Signing.PrivateKey().publicKey)
        let flags: UInt8 = 0x01 | 0x04 | 0x08 | 0x40
        let registration = rpIDHash + [flags, 0, 0, 0, 5] + [UInt8](repeating: 0, count: 16)
            + [0, UInt8(credentialID.count)] + credentialID + cose
        let data = try AuthenticatorData(registration)
        XCTAssertEqual(data.rpIDHash, rpIDHash)
        XCTAssertTrue(data.flags.contains([.userPresent, .userVerified, .backupEligible]))
        XCTAssertFalse(data.flags.contains(.backedUp))
        XCTAssertEqual(data.signCount, 5)
        XCTAssertEqual(data.credential?.id, credentialID)
        XCTAssertEqual(data.credential?.publicKey.encoded, cose)

        let assertion = try AuthenticatorData(rpIDHash + [0x05, 0, 0, 1, 0])
        XCTAssertNil(assertion.credential)
        XCTAssertEqual(assertion.signCount, 256)

        func code(_ bytes: [UInt8]) -> String {
            do {
                _ = try AuthenticatorData(bytes)
                return "accepted"
            } catch {
                return listed(error)
            }
        }
        XCTAssertEqual(code(Array(rpIDHash.prefix(20))), "bad_authenticator_data", "cut short")
        XCTAssertEqual(code(registration + [0x00]), "bad_authenticator_data", "bytes after the key")
        XCTAssertEqual(code(Array(registration.dropLast(3))), "bad_key", "the key cut short")
        XCTAssertEqual(code(rpIDHash + [0x41, 0, 0, 0, 1]), "bad_authenticator_data", "AT set, no credential")
        XCTAssertEqual(code(rpIDHash + [0x01, 0, 0, 0, 1] + [0xA0]), "bad_authenticator_data",
                       "extension bytes without the ED flag")
        XCTAssertEqual(code(rpIDHash + [0x81, 0, 0, 0, 1] + [0xA0]), "accepted", "an empty extensions map")
        XCTAssertEqual(code(rpIDHash + [0x81, 0, 0, 0, 1] + [0x80]), "bad_authenticator_data", "extensions not a map")
    }
}
