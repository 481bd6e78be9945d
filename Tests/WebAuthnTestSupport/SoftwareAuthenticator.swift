import Crypto
import Foundation
import WebAuthn

/// A passkey authenticator in software (one P-256 key, "none" attestation, a counter), for
/// tests that run whole ceremonies without a browser. It answers in WebAuthn's JSON forms, as
/// `PublicKeyCredential.toJSON()` does. The browser tests use Chromium's own authenticator.
public final class SoftwareAuthenticator: @unchecked Sendable {
    public let credentialID: [UInt8]
    private let key = P256.Signing.PrivateKey()
    private var counter: UInt32 = 0
    /// UP, UV and AT for a registration; UP and UV for an assertion (WebAuthn §6.1 flags).
    public var flags: UInt8 = 0x05
    /// For attack tests: sent instead of the attestation object a registration would carry.
    public var attestationObject: [UInt8]?
    /// For attack tests: sent instead of the COSE public key in the authenticator data, in
    /// registrations and (with the AT flag) in assertions.
    public var publicKeyBytes: [UInt8]?
    /// For attack tests: appended after the authenticator data's other parts, the ED flag set.
    public var extensionBytes: [UInt8]?
    /// For attack tests: leaves the user handle out of an assertion.
    public var omitsUserHandle = false

    public init(credentialID: [UInt8] = (0..<16).map { _ in UInt8.random(in: .min ... .max) }) {
        self.credentialID = credentialID
    }

    /// A `RegistrationResponseJSON` for creation options (`CreationOptions.json`), as the
    /// browser at `origin` would send it.
    public func register(options json: String, origin: String) throws -> String {
        let options = try JSONDecoder().decode(Options.self, from: Data(json.utf8))
        let client = clientData(type: "webauthn.create", challenge: options.challenge, origin: origin)
        let authData = authenticatorData(rpID: options.rp?.id ?? "", flags: flags | 0x40, attested: true)
        let object: [UInt8] = attestationObject ?? [0xA3] + Self.text("fmt") + Self.text("none") + Self.text("attStmt") + [0xA0]
            + Self.text("authData") + Self.bytes(authData)
        let id = Base64URL.encode(credentialID)
        return #"{"id":"\#(id)","rawId":"\#(id)","type":"public-key","response":{"clientDataJSON":"\#(Base64URL.encode(client))","attestationObject":"\#(Base64URL.encode(object))","transports":["internal"]},"clientExtensionResults":{}}"#
    }

    /// An `AuthenticationResponseJSON` for request options (`RequestOptions.json`), signed
    /// with the next counter value, carrying `userHandle`.
    public func assert(options json: String, origin: String, userHandle: [UInt8]) throws -> String {
        let options = try JSONDecoder().decode(Options.self, from: Data(json.utf8))
        counter += 1
        let client = clientData(type: "webauthn.get", challenge: options.challenge, origin: origin)
        let authData = authenticatorData(rpID: options.rpId ?? "", flags: publicKeyBytes == nil ? flags : flags | 0x40,
                                         attested: publicKeyBytes != nil)
        let signature = try key.signature(for: authData + Array(SHA256.hash(data: client))).derRepresentation
        let id = Base64URL.encode(credentialID)
        let handle = omitsUserHandle ? "" : #","userHandle":"\#(Base64URL.encode(userHandle))""#
        return #"{"id":"\#(id)","rawId":"\#(id)","type":"public-key","response":{"clientDataJSON":"\#(Base64URL.encode(client))","authenticatorData":"\#(Base64URL.encode(authData))","signature":"\#(Base64URL.encode(Array(signature)))"\#(handle)},"clientExtensionResults":{}}"#
    }

    private struct Options: Decodable {
        struct Party: Decodable { let id: String }
        let challenge: String
        let rp: Party?
        let rpId: String?
    }

    private func clientData(type: String, challenge: String, origin: String) -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }

    private func authenticatorData(rpID: String, flags: UInt8, attested: Bool) -> [UInt8] {
        var data = Array(SHA256.hash(data: Array(rpID.utf8))) + [extensionBytes == nil ? flags : flags | 0x80]
        data += [UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF)]
        if attested {
            let raw = Array(key.publicKey.rawRepresentation)
            let cose: [UInt8] = [0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21] + Self.bytes(Array(raw[0..<32]))
                + [0x22] + Self.bytes(Array(raw[32...]))
            data += [UInt8](repeating: 0, count: 16) + [0, UInt8(credentialID.count)] + credentialID + (publicKeyBytes ?? cose)
        }
        return data + (extensionBytes ?? [])
    }

    // The few CBOR heads these messages need (short texts, byte strings under 64 KiB).
    private static func text(_ text: String) -> [UInt8] { [0x60 | UInt8(text.utf8.count)] + Array(text.utf8) }

    private static func bytes(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.count < 24 { return [0x40 | UInt8(bytes.count)] + bytes }
        if bytes.count < 256 { return [0x58, UInt8(bytes.count)] + bytes }
        return [0x59, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
    }
}
