import Foundation

// WebAuthn Level 3's JSON forms (§5.1.8, §5.1.10, §5.4, §5.5): what a browser's
// `PublicKeyCredential.toJSON()` sends and `parseCreationOptionsFromJSON` /
// `parseRequestOptionsFromJSON` read. Bytes are base64url without padding.

extension RegistrationResponse {
    /// A `RegistrationResponseJSON`, with its credential id.
    /// - Throws: `WebAuthnError("malformed")` naming what is missing or malformed.
    public static func decode(json text: String) throws(WebAuthnError) -> (id: [UInt8], response: RegistrationResponse) {
        struct Inner: Decodable {
            let clientDataJSON: String
            let attestationObject: String
            let transports: [String]?
        }
        let (id, body) = try decodeCredential(text, Inner.self)
        // Transports are hints for later sign-ins; a browser's list is short and plain.
        let transports = (body.transports ?? []).filter { $0.count <= 32 && $0.allSatisfy { $0.isLetter || $0 == "-" } }
        return (id, RegistrationResponse(
            clientDataJSON: try bytes(body.clientDataJSON, "clientDataJSON"),
            attestationObject: try bytes(body.attestationObject, "attestationObject"),
            transports: Array(transports.prefix(8))))
    }
}

extension AssertionResponse {
    /// An `AuthenticationResponseJSON`.
    /// - Throws: `WebAuthnError("malformed")` naming what is missing or malformed.
    public init(json text: String) throws(WebAuthnError) {
        struct Inner: Decodable {
            let clientDataJSON: String
            let authenticatorData: String
            let signature: String
            let userHandle: String?
        }
        let (id, body) = try decodeCredential(text, Inner.self)
        self.init(credentialID: id,
                  clientDataJSON: try bytes(body.clientDataJSON, "clientDataJSON"),
                  authenticatorData: try bytes(body.authenticatorData, "authenticatorData"),
                  signature: try bytes(body.signature, "signature"),
                  userHandle: try body.userHandle.map { handle throws(WebAuthnError) in try bytes(handle, "userHandle") })
    }
}

extension WebAuthnCeremony {
    /// The challenge a response's client data carries, before anything is verified: where
    /// challenges check themselves (signed by the relying party), it is the expectation.
    public static func challenge(inClientData json: [UInt8]) throws(WebAuthnError) -> [UInt8] {
        struct Body: Decodable { let challenge: String }
        guard json.count <= 4096, let body = try? JSONDecoder().decode(Body.self, from: Data(json)),
              let challenge = Base64URL.decode(body.challenge) else {
            throw WebAuthnError("bad_client_data", "the client data carries no challenge")
        }
        return challenge
    }
}

/// `PublicKeyCredentialCreationOptionsJSON`: what the browser needs to make a passkey.
public struct CreationOptions: Encodable, Sendable {
    public struct Party: Encodable, Sendable {
        public let id: String
        public let name: String
    }

    public struct User: Encodable, Sendable {
        /// The user handle, base64url.
        public let id: String
        public let name: String
        public let displayName: String
    }

    public struct Parameter: Encodable, Sendable {
        public let type = "public-key"
        public let alg: Int
    }

    public struct Descriptor: Encodable, Sendable {
        public let type = "public-key"
        public let id: String
        public let transports: [String]?
    }

    public struct Selection: Encodable, Sendable {
        public let residentKey = "required"
        public let requireResidentKey = true
        public let userVerification = "preferred"
    }

    public let rp: Party
    public let user: User
    public let challenge: String
    public let pubKeyCredParams: [Parameter]
    public let timeout: Int
    public let excludeCredentials: [Descriptor]
    public let authenticatorSelection = Selection()
    public let attestation = "none"

    /// A discoverable credential (a passkey), user verification preferred, for the algorithms
    /// `COSEKey` checks (EdDSA and ES256 first, RS256 for authenticators that have only it).
    public init(relyingParty: RelyingParty, name: String, userHandle: [UInt8], userName: String, challenge: [UInt8],
                timeoutMilliseconds: Int, excluding: [(id: [UInt8], transports: [String])] = []) {
        rp = Party(id: relyingParty.id, name: name)
        user = User(id: Base64URL.encode(userHandle), name: userName, displayName: userName)
        self.challenge = Base64URL.encode(challenge)
        pubKeyCredParams = [COSEKey.Algorithm.edDSA, .es256, .rs256].map { Parameter(alg: $0.rawValue) }
        timeout = timeoutMilliseconds
        excludeCredentials = excluding.map {
            Descriptor(id: Base64URL.encode($0.id), transports: $0.transports.isEmpty ? nil : $0.transports)
        }
    }

    public var json: String { encodeJSON(self) }
}

/// `PublicKeyCredentialRequestOptionsJSON` for a discoverable sign-in: no credentials are
/// listed, the authenticator offers the passkeys it holds for the site.
public struct RequestOptions: Encodable, Sendable {
    public let challenge: String
    public let rpId: String
    public let timeout: Int
    public let userVerification = "preferred"
    public let allowCredentials: [String] = []

    public init(relyingParty: RelyingParty, challenge: [UInt8], timeoutMilliseconds: Int) {
        self.challenge = Base64URL.encode(challenge)
        rpId = relyingParty.id
        timeout = timeoutMilliseconds
    }

    public var json: String { encodeJSON(self) }
}

private func encodeJSON(_ value: some Encodable) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    // Plain strings, numbers and arrays: encoding cannot fail.
    return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
}

private func decodeJSON<T: Decodable>(_ text: String) throws(WebAuthnError) -> T {
    guard text.utf8.count <= 16 * 1024 else { throw malformed("the response is over 16 KiB") }
    do {
        return try JSONDecoder().decode(T.self, from: Data(text.utf8))
    } catch {
        throw malformed("the response is not the JSON WebAuthn defines (\(error))")
    }
}

/// Both JSON forms: a `public-key` credential whose id comes twice (`id`, `rawId`, the same
/// bytes) and whose `response` is the ceremony's own.
private struct CredentialJSON<Response: Decodable>: Decodable {
    let id: String
    let rawId: String
    let type: String
    let response: Response
}

/// A credential's id and its `response`, checked as both forms need.
private func decodeCredential<Response: Decodable>(_ text: String, _: Response.Type) throws(WebAuthnError) -> ([UInt8], Response) {
    let body: CredentialJSON<Response> = try decodeJSON(text)
    let id = try bytes(body.id, "id")
    guard try bytes(body.rawId, "rawId") == id else { throw malformed("id and rawId differ") }
    guard body.type == "public-key" else { throw malformed("the type is '\(body.type)', not 'public-key'") }
    return (id, body.response)
}

private func bytes(_ text: String, _ name: String) throws(WebAuthnError) -> [UInt8] {
    guard let bytes = Base64URL.decode(text) else { throw malformed("'\(name)' is not base64url") }
    return bytes
}

private func malformed(_ detail: String) -> WebAuthnError {
    WebAuthnError("malformed", detail)
}
