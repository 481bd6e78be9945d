import CBORDecoder
import Foundation
import WebAuthn

/// A passkey Chromium's virtual authenticator made (Tests/WebAuthnTests/Fixtures): its
/// registration and a sign-in with it, for `localhost`, challenge bytes 0…31. The targets
/// start from what a real browser sends, so mutations reach the deep checks.
private struct RecordedPasskey {
    let relyingParty: RelyingParty
    let challenge: [UInt8] = Array(0..<32)
    let registrationJSON: String
    let assertionJSON: String
    let registration: RegistrationResponse
    let credential: StoredCredential

    static let es256: RecordedPasskey = {
        let url = FuzzResources.url("Tests/WebAuthnTests/Fixtures/chromium-virtual-authenticator.json")
        guard let data = try? Data(contentsOf: url),
              let all = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let recorded = all["-7"] as? [String: Any],
              let origin = recorded["origin"] as? String, let rpID = recorded["rpId"] as? String,
              let registration = recorded["registration"], let assertion = recorded["assertion"],
              let registrationData = try? JSONSerialization.data(withJSONObject: registration),
              let assertionData = try? JSONSerialization.data(withJSONObject: assertion)
        else { fatalError("cannot read \(url.path)") }
        let party = RelyingParty(id: rpID, origins: [origin])
        let registrationJSON = String(decoding: registrationData, as: UTF8.self)
        guard let decoded = try? RegistrationResponse.decode(json: registrationJSON),
              let verified = try? WebAuthnCeremony.verifyRegistration(decoded.response, expectedChallenge: Array(0..<32),
                                                                      relyingParty: party)
        else { fatalError("the recorded registration no longer verifies") }
        let userHandle = (try? AssertionResponse(json: String(decoding: assertionData, as: UTF8.self)))?.userHandle ?? []
        return RecordedPasskey(
            relyingParty: party, registrationJSON: registrationJSON,
            assertionJSON: String(decoding: assertionData, as: UTF8.self), registration: decoded.response,
            credential: StoredCredential(id: verified.credentialID, publicKey: verified.publicKey, signCount: 0,
                                         userHandle: userHandle))
    }()
}

/// The recorded ceremonies' parts, both algorithms (ES256 and RS256), as seeds.
enum RecordedCeremonies {
    static func parts(_ pick: ([String: Any]) -> [String: Any]) -> [(name: String, bytes: [UInt8])] {
        let url = FuzzResources.url("Tests/WebAuthnTests/Fixtures/chromium-virtual-authenticator.json")
        guard let data = try? Data(contentsOf: url), let all = try? JSONSerialization.jsonObject(with: data) as? [String: [String: Any]]
        else { return [] }
        return all.sorted { $0.key < $1.key }.flatMap { algorithm, recorded in
            pick(recorded).sorted { $0.key < $1.key }.compactMap { name, value -> (String, [UInt8])? in
                if let text = value as? String { return ("\(algorithm)-\(name)", Base64URL.decode(text) ?? Array(text.utf8)) }
                guard let json = try? JSONSerialization.data(withJSONObject: value) else { return nil }
                return ("\(algorithm)-\(name)", Array(json))
            }
        }
    }

    static func response(_ recorded: [String: Any], _ ceremony: String) -> [String: Any] {
        ((recorded[ceremony] as? [String: Any])?["response"] as? [String: Any]) ?? [:]
    }
}

extension FuzzTarget {
    /// The JSON a browser posts to add a passkey (form field `response`), through every check
    /// of the registration ceremony.
    static let webauthnRegistration = FuzzTarget(
        name: "webauthn-registration",
        summary: "a passkey registration's JSON: RegistrationResponse.decode, verifyRegistration",
        seeds: { RecordedCeremonies.parts { ["registration": $0["registration"] ?? [:]] } }
    ) { input in
        let passkey = RecordedPasskey.es256
        guard let (id, response) = try? RegistrationResponse.decode(json: input.text) else { return }
        fuzzCheck(response.transports.count <= 8 && response.transports.allSatisfy { $0.utf8.count <= 32 },
                  "transports beyond their bounds")
        guard let verified = try? WebAuthnCeremony.verifyRegistration(response, expectedChallenge: passkey.challenge,
                                                                      relyingParty: passkey.relyingParty) else { return }
        fuzzCheck(verified.credentialID.count <= 1023, "a credential id over 1023 bytes")
        _ = id
        checkStoredKeyReads(verified)
    }

    /// The JSON a browser posts to sign in with a passkey, checked against the recorded one.
    static let webauthnAssertion = FuzzTarget(
        name: "webauthn-assertion",
        summary: "a passkey sign-in's JSON: AssertionResponse(json:), verifyAssertion",
        seeds: { RecordedCeremonies.parts { ["assertion": $0["assertion"] ?? [:]] } }
    ) { input in
        let passkey = RecordedPasskey.es256
        guard let response = try? AssertionResponse(json: input.text) else { return }
        guard (try? WebAuthnCeremony.verifyAssertion(response, expectedChallenge: passkey.challenge,
                                                     relyingParty: passkey.relyingParty,
                                                     credential: passkey.credential)) != nil else { return }
        // Only what the authenticator signed is believed: a sign-in that verifies carries the
        // recorded authenticator data and client data, byte for byte.
        let recorded = try! AssertionResponse(json: passkey.assertionJSON)
        fuzzCheck(response.authenticatorData == recorded.authenticatorData && response.clientDataJSON == recorded.clientDataJSON,
                  "an assertion verified with data its signature does not cover")
    }

    /// Authenticator data alone: flags, counter, the attested credential, extensions.
    static let authenticatorData = FuzzTarget(
        name: "authenticator-data",
        summary: "WebAuthn authenticator data: AuthenticatorData(_:), COSE keys inside",
        seeds: {
            RecordedCeremonies.parts {
                ["registration": RecordedCeremonies.response($0, "registration")["authenticatorData"] ?? "",
                 "assertion": RecordedCeremonies.response($0, "assertion")["authenticatorData"] ?? ""]
            }
        }
    ) { input in
        let bytes = input.bytes
        guard let data = try? AuthenticatorData(bytes) else { return }
        fuzzCheck(bytes.count >= 37 && data.rpIDHash == Array(bytes[0..<32]), "the RP id hash is not the first 32 bytes")
        fuzzCheck((data.credential != nil) == data.flags.contains(.attestedCredentialData),
                  "an attested credential without its flag, or the flag without one")
        if let credential = data.credential {
            fuzzCheck(credential.id.count <= 1023, "a credential id over 1023 bytes")
            // The server stores the key's bytes and reads them again at every sign-in.
            let again = try? COSEKey(cbor: credential.publicKey.encoded)
            fuzzCheck(again?.algorithm == credential.publicKey.algorithm, "a stored key does not read back")
        }
    }

    /// An attestation object under the recorded client data: CBOR, the format's statement,
    /// the authenticator data, the key.
    static let attestationObject = FuzzTarget(
        name: "attestation-object",
        summary: "WebAuthn attestation objects: verifyRegistration with the recorded client data",
        seeds: { RecordedCeremonies.parts { ["attestation": RecordedCeremonies.response($0, "registration")["attestationObject"] ?? ""] } }
    ) { input in
        let passkey = RecordedPasskey.es256
        let response = RegistrationResponse(clientDataJSON: passkey.registration.clientDataJSON,
                                            attestationObject: input.bytes)
        guard let verified = try? WebAuthnCeremony.verifyRegistration(response, expectedChallenge: passkey.challenge,
                                                                      relyingParty: passkey.relyingParty) else { return }
        fuzzCheck(WebAuthnCeremony.knownAttestationFormats.contains(verified.attestationFormat), "an unknown format accepted")
        checkStoredKeyReads(verified)
    }

    /// clientDataJSON under the recorded attestation: the type, challenge and origin checks.
    static let clientDataJSON = FuzzTarget(
        name: "client-data-json",
        summary: "WebAuthn clientDataJSON: challenge(inClientData:), verifyRegistration's checks",
        seeds: { RecordedCeremonies.parts { ["client-data": RecordedCeremonies.response($0, "registration")["clientDataJSON"] ?? ""] } }
    ) { input in
        let passkey = RecordedPasskey.es256
        _ = try? WebAuthnCeremony.challenge(inClientData: input.bytes)
        let response = RegistrationResponse(clientDataJSON: input.bytes, attestationObject: passkey.registration.attestationObject)
        guard (try? WebAuthnCeremony.verifyRegistration(response, expectedChallenge: passkey.challenge,
                                                        relyingParty: passkey.relyingParty)) != nil else { return }
        // Accepted client data says what the ceremony asked, read as WebAuthn §7.1 step 5 reads
        // it (UTF-8 decode, invalid bytes replaced, then JSON) by another JSON reader.
        let text = String(decoding: input.bytes, as: UTF8.self)
        let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        fuzzCheck(object?["type"] as? String == "webauthn.create", "accepted client data of another type")
        fuzzCheck((object?["origin"] as? String).map(passkey.relyingParty.origins.contains) == true,
                  "accepted client data from another origin")
        fuzzCheck((object?["challenge"] as? String).flatMap(Base64URL.decode) == passkey.challenge,
                  "accepted client data for another challenge")
        fuzzCheck(object?["crossOrigin"] as? Bool != true, "accepted a cross-origin ceremony")
    }

    private static func checkStoredKeyReads(_ verified: VerifiedRegistration) {
        let key = try? COSEKey(cbor: verified.publicKey)
        fuzzCheck(key?.algorithm == verified.algorithm, "a registered key does not read back as stored")
    }
}
