import CBORDecoder

/// An authenticator's data (WebAuthn §6.1): the relying party's id hash, the flags, the
/// signature counter and, at registration, the new credential with its public key.
public struct AuthenticatorData: Sendable {
    public struct Flags: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The person was present (touched, clicked).
        public static let userPresent = Flags(rawValue: 0x01)
        /// The person was verified (biometrics, PIN).
        public static let userVerified = Flags(rawValue: 0x04)
        /// The credential may be backed up (synced passkey).
        public static let backupEligible = Flags(rawValue: 0x08)
        /// The credential is backed up now.
        public static let backedUp = Flags(rawValue: 0x10)
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        public static let extensionData = Flags(rawValue: 0x80)
    }

    /// A credential as registration creates it.
    public struct AttestedCredential: Sendable {
        public let aaguid: [UInt8]
        public let id: [UInt8]
        public let publicKey: COSEKey
    }

    public let rpIDHash: [UInt8]
    public let flags: Flags
    public let signCount: UInt32
    public let credential: AttestedCredential?
    /// The bytes as signed (an assertion's signature covers them with the client data hash).
    public let bytes: [UInt8]

    /// Longest credential id WebAuthn allows.
    public static let maximumCredentialIDLength = 1023

    /// - Throws: `WebAuthnError` "bad_authenticator_data" for data cut short, with bytes left
    ///   over, or with flags that do not match what follows; the key's own errors.
    public init(_ bytes: [UInt8]) throws(WebAuthnError) {
        func fail(_ detail: String) -> WebAuthnError { WebAuthnError("bad_authenticator_data", detail) }
        guard bytes.count >= 37 else { throw fail("\(bytes.count) bytes; at least 37 are needed") }
        self.bytes = bytes
        rpIDHash = Array(bytes[0..<32])
        flags = Flags(rawValue: bytes[32])
        signCount = bytes[33..<37].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var rest = Array(bytes[37...])
        if flags.contains(.attestedCredentialData) {
            guard rest.count >= 18 else { throw fail("the attested credential is cut short") }
            let aaguid = Array(rest[0..<16])
            let length = Int(rest[16]) << 8 | Int(rest[17])
            guard length <= Self.maximumCredentialIDLength, rest.count >= 18 + length else {
                throw fail("the credential id is cut short or longer than \(Self.maximumCredentialIDLength) bytes")
            }
            let id = Array(rest[18..<(18 + length)])
            let keyBytes = Array(rest[(18 + length)...])
            let decoded: (value: CBORValue, length: Int)
            do {
                decoded = try CBORValue.decodePrefix(keyBytes)
            } catch {
                throw WebAuthnError("bad_key", "the public key is not CBOR: \(error)")
            }
            let key = try COSEKey(decoded.value, encoded: Array(keyBytes[..<decoded.length]))
            credential = AttestedCredential(aaguid: aaguid, id: id, publicKey: key)
            rest = Array(keyBytes[decoded.length...])
        } else {
            credential = nil
        }
        if flags.contains(.extensionData) {
            do {
                let extensions = try CBORValue.decodePrefix(rest)
                guard case .map = extensions.value else { throw fail("the extensions are not a map") }
                rest = Array(rest[extensions.length...])
            } catch let error as WebAuthnError {
                throw error
            } catch {
                throw fail("the extensions are not CBOR: \(error)")
            }
        }
        guard rest.isEmpty else { throw fail("\(rest.count) bytes follow what the flags announce") }
    }
}
