import CBORDecoder
import Crypto
import Foundation

/// Who the credentials are for: the relying party's id (the site's domain) and the origins
/// its pages are served from.
public struct RelyingParty: Sendable, Equatable {
    public let id: String
    public let origins: [String]

    public init(id: String, origins: [String]) {
        self.id = id
        self.origins = origins
    }

    var idHash: [UInt8] { Array(SHA256.hash(data: Array(id.utf8))) }
}

/// What a browser's `navigator.credentials.create()` gave back, decoded from base64url.
public struct RegistrationResponse: Sendable {
    public let clientDataJSON: [UInt8]
    public let attestationObject: [UInt8]
    public let transports: [String]

    public init(clientDataJSON: [UInt8], attestationObject: [UInt8], transports: [String] = []) {
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
    }
}

/// A registration that passed every check: what is stored with the account.
public struct VerifiedRegistration: Sendable {
    public let credentialID: [UInt8]
    /// The COSE key's CBOR, as the authenticator sent it.
    public let publicKey: [UInt8]
    public let algorithm: COSEKey.Algorithm
    public let signCount: UInt32
    public let transports: [String]
    public let isBackupEligible: Bool
    public let isBackedUp: Bool
    public let isUserVerified: Bool
    public let attestationFormat: String
    public let aaguid: [UInt8]
}

/// What `navigator.credentials.get()` gave back, decoded from base64url.
public struct AssertionResponse: Sendable {
    public let credentialID: [UInt8]
    public let clientDataJSON: [UInt8]
    public let authenticatorData: [UInt8]
    public let signature: [UInt8]
    public let userHandle: [UInt8]?

    public init(credentialID: [UInt8], clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8],
                userHandle: [UInt8]?) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
    }
}

/// A stored credential an assertion is checked against.
public struct StoredCredential: Sendable {
    public let id: [UInt8]
    public let publicKey: [UInt8]
    public let signCount: UInt32
    public let userHandle: [UInt8]

    public init(id: [UInt8], publicKey: [UInt8], signCount: UInt32, userHandle: [UInt8]) {
        self.id = id
        self.publicKey = publicKey
        self.signCount = signCount
        self.userHandle = userHandle
    }
}

/// An assertion that passed: the new counter and flags to store.
public struct VerifiedAssertion: Sendable {
    public let signCount: UInt32
    public let isUserVerified: Bool
    public let isBackedUp: Bool
}

/// The relying party's checks of WebAuthn Level 3 §7.1 (registration) and §7.2
/// (authentication). Every refusal is a `WebAuthnError` whose code names the check.
public enum WebAuthnCeremony {
    /// Attestation formats whose statements are taken as they are: no trust decision is made
    /// about the authenticator's maker (none is configured), only "none" must be empty.
    public static let knownAttestationFormats: Set<String> = ["none", "packed", "tpm", "android-key",
                                                             "android-safetynet", "fido-u2f", "apple"]

    /// - Parameter requireUserPresence: false only for a conditional create (the browser saves
    ///   a passkey by itself after a password sign-in), where §7.1 lets the authenticator
    ///   leave UP unset.
    public static func verifyRegistration(
        _ response: RegistrationResponse, expectedChallenge: [UInt8], relyingParty: RelyingParty,
        requireUserVerification: Bool = false, requireUserPresence: Bool = true
    ) throws(WebAuthnError) -> VerifiedRegistration {
        try checkClientData(response.clientDataJSON, type: "webauthn.create", challenge: expectedChallenge,
                            relyingParty: relyingParty)
        let object: CBORValue
        do {
            object = try CBORValue.decode(response.attestationObject)
        } catch {
            throw WebAuthnError("bad_attestation", "the attestation object is not CBOR: \(error)")
        }
        guard let format = object["fmt"]?.textString, let statement = object["attStmt"],
              let authenticatorBytes = object["authData"]?.byteString else {
            throw WebAuthnError("bad_attestation", "the attestation object lacks fmt, attStmt or authData")
        }
        guard knownAttestationFormats.contains(format) else {
            throw WebAuthnError("bad_attestation", "unknown attestation format '\(format)'")
        }
        if format == "none", statement != .map([]) {
            throw WebAuthnError("bad_attestation", "a 'none' attestation with a statement")
        }
        let data = try AuthenticatorData(authenticatorBytes)
        try checkAuthenticator(data, relyingParty: relyingParty, requireUserVerification: requireUserVerification,
                               requireUserPresence: requireUserPresence)
        guard let credential = data.credential else {
            throw WebAuthnError("bad_authenticator_data", "a registration without its credential")
        }
        if format == "packed", statement["x5c"] == nil {
            // Self attestation: the new key signs the authenticator data and the client data hash.
            guard let signature = statement["sig"]?.byteString, statement["alg"]?.int == credential.publicKey.algorithm.rawValue,
                  credential.publicKey.isValidSignature(signature, for: authenticatorBytes + clientDataHash(response.clientDataJSON))
            else { throw WebAuthnError("bad_attestation", "the packed self-attestation signature does not verify") }
        }
        return VerifiedRegistration(
            credentialID: credential.id, publicKey: credential.publicKey.encoded, algorithm: credential.publicKey.algorithm,
            signCount: data.signCount, transports: response.transports,
            isBackupEligible: data.flags.contains(.backupEligible), isBackedUp: data.flags.contains(.backedUp),
            isUserVerified: data.flags.contains(.userVerified), attestationFormat: format, aaguid: credential.aaguid)
    }

    public static func verifyAssertion(
        _ response: AssertionResponse, expectedChallenge: [UInt8], relyingParty: RelyingParty,
        credential: StoredCredential, requireUserVerification: Bool = false, discoverable: Bool = true
    ) throws(WebAuthnError) -> VerifiedAssertion {
        guard response.credentialID == credential.id else {
            throw WebAuthnError("unknown_credential", "the assertion is for another credential")
        }
        // §7.2 step 6: when the options named no credentials (a discoverable sign-in, the
        // only kind this server asks for), the authenticator must say whose account it is.
        if discoverable, response.userHandle == nil {
            throw WebAuthnError("missing_user_handle", "a discoverable sign-in's response has no user handle")
        }
        if let handle = response.userHandle, handle != credential.userHandle {
            throw WebAuthnError("wrong_user", "the user handle is not this credential's account")
        }
        try checkClientData(response.clientDataJSON, type: "webauthn.get", challenge: expectedChallenge,
                            relyingParty: relyingParty)
        let data = try AuthenticatorData(response.authenticatorData)
        try checkAuthenticator(data, relyingParty: relyingParty, requireUserVerification: requireUserVerification)
        let key = try COSEKey(cbor: credential.publicKey)
        guard key.isValidSignature(response.signature, for: response.authenticatorData + clientDataHash(response.clientDataJSON)) else {
            throw WebAuthnError("bad_signature", "the signature does not verify with the stored key")
        }
        // A counter that does not grow (when either side counts) suggests a cloned authenticator.
        if data.signCount != 0 || credential.signCount != 0, data.signCount <= credential.signCount {
            throw WebAuthnError("sign_count", "the signature counter went from \(credential.signCount) to \(data.signCount)")
        }
        return VerifiedAssertion(signCount: data.signCount, isUserVerified: data.flags.contains(.userVerified),
                                 isBackedUp: data.flags.contains(.backedUp))
    }

    static func clientDataHash(_ json: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: json))
    }

    private struct ClientData: Decodable {
        let type: String
        let challenge: String
        let origin: String
        let crossOrigin: Bool?
    }

    private static func checkClientData(_ json: [UInt8], type: String, challenge: [UInt8],
                                        relyingParty: RelyingParty) throws(WebAuthnError) {
        // No byte below 0x20: JSON forbids them unescaped in a string, and browsers serialize
        // client data without whitespace (§5.8.1.1). Foundation's JSONDecoder lets them through
        // in strings, where every other JSON reader refuses the text (found by fuzzing).
        guard json.count <= 4096, !json.contains(where: { $0 < 0x20 }),
              let client = try? JSONDecoder().decode(ClientData.self, from: Data(json)) else {
            throw WebAuthnError("bad_client_data", "the client data is not the JSON WebAuthn defines")
        }
        // A member named twice is read as its first by JSONDecoder and as its last by other
        // readers (JSONSerialization, most libraries): which origin was checked would depend
        // on the reader (found by fuzzing). Browsers never repeat one; the second reading must
        // say the same for every member checked, or the client data is refused.
        let members = (try? JSONSerialization.jsonObject(with: Data(json))) as? [String: Any]
        guard members?["type"] as? String == client.type, members?["challenge"] as? String == client.challenge,
              members?["origin"] as? String == client.origin, members?["crossOrigin"] as? Bool == client.crossOrigin
        else {
            throw WebAuthnError("bad_client_data", "the client data names a member twice")
        }
        guard client.type == type else {
            throw WebAuthnError("wrong_type", "the client data says '\(client.type)', not '\(type)'")
        }
        guard let given = Base64URL.decode(client.challenge), given.count == challenge.count,
              zip(given, challenge).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0 else {
            throw WebAuthnError("wrong_challenge", "the challenge is not the one this server issued")
        }
        guard relyingParty.origins.contains(client.origin) else {
            throw WebAuthnError("wrong_origin", "the origin '\(client.origin)' is not this site's")
        }
        guard client.crossOrigin != true else {
            throw WebAuthnError("wrong_origin", "made inside another site's frame")
        }
    }

    private static func checkAuthenticator(_ data: AuthenticatorData, relyingParty: RelyingParty,
                                           requireUserVerification: Bool,
                                           requireUserPresence: Bool = true) throws(WebAuthnError) {
        guard data.rpIDHash == relyingParty.idHash else {
            throw WebAuthnError("wrong_rp_id", "the credential is scoped to another site")
        }
        guard data.flags.contains(.userPresent) || !requireUserPresence else {
            throw WebAuthnError("user_not_present", "the authenticator did not see the person (UP not set)")
        }
        if requireUserVerification, !data.flags.contains(.userVerified) {
            throw WebAuthnError("user_not_verified", "the authenticator did not verify the person (UV not set)")
        }
        if data.flags.contains(.backedUp), !data.flags.contains(.backupEligible) {
            throw WebAuthnError("bad_authenticator_data", "backed up (BS) but not eligible for backup (BE)")
        }
    }
}

/// base64url without padding, as WebAuthn's JSON carries bytes.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// nil for anything that is not base64url (padding tolerated).
    public static func decode(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !base64.contains("=") || base64.hasSuffix("=") else { return nil }
        base64 = base64.replacingOccurrences(of: "=", with: "")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map { Array($0) }
    }
}
