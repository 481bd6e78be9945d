import Crypto
import Foundation
import WebAuthn
import XCTest

/// Registration and authentication as the relying party checks them, against a software
/// authenticator written here (a P-256 key); the browser tests do the same against Chromium's
/// virtual authenticator and cross-check with py_webauthn. Each tampering is refused by name.
final class CeremonyTests: XCTestCase {
    private let site = RelyingParty(id: "localhost", origins: ["http://localhost:8080"])
    private let key = P256.Signing.PrivateKey()
    private let credentialID: [UInt8] = (0..<16).map { UInt8($0 * 7) }
    private let userHandle: [UInt8] = (0..<16).map { UInt8(255 - $0) }
    private let challenge: [UInt8] = (0..<32).map { UInt8($0) }

    private func cborText(_ text: String) -> [UInt8] { [0x60 | UInt8(text.utf8.count)] + Array(text.utf8) }

    private func cborBytes(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.count < 24 { return [0x40 | UInt8(bytes.count)] + bytes }
        if bytes.count < 256 { return [0x58, UInt8(bytes.count)] + bytes }
        return [0x59, UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
    }

    private var coseKey: [UInt8] {
        let raw = Array(key.publicKey.rawRepresentation)
        return [0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21] + cborBytes(Array(raw[0..<32])) + [0x22] + cborBytes(Array(raw[32...]))
    }

    private func clientData(type: String, challenge: [UInt8]? = nil, origin: String = "http://localhost:8080") -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(Base64URL.encode(challenge ?? self.challenge))","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }

    private func authenticatorData(rpID: String = "localhost", flags: UInt8, counter: UInt32, attested: Bool) -> [UInt8] {
        var data = Array(SHA256.hash(data: Array(rpID.utf8))) + [flags]
        data += [UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF)]
        if attested {
            data += [UInt8](repeating: 0, count: 16) + [0, UInt8(credentialID.count)] + credentialID + coseKey
        }
        return data
    }

    private func registration(flags: UInt8 = 0x45, rpID: String = "localhost", clientData: [UInt8]? = nil,
                              statement: [UInt8] = [0xA0]) -> RegistrationResponse {
        let authData = authenticatorData(rpID: rpID, flags: flags, counter: 0, attested: true)
        let object: [UInt8] = [0xA3] + cborText("fmt") + cborText("none") + cborText("attStmt") + statement
            + cborText("authData") + cborBytes(authData)
        return RegistrationResponse(clientDataJSON: clientData ?? self.clientData(type: "webauthn.create"),
                                    attestationObject: object, transports: ["internal"])
    }

    private func refusal(_ response: RegistrationResponse, requireUV: Bool = false) -> String {
        do {
            _ = try WebAuthnCeremony.verifyRegistration(response, expectedChallenge: challenge, relyingParty: site,
                                                       requireUserVerification: requireUV)
            return "accepted"
        } catch {
            return listed(error)
        }
    }

    func testARegistrationIsVerifiedAndWhatIsStoredComesFromIt() throws {
        let verified = try WebAuthnCeremony.verifyRegistration(registration(), expectedChallenge: challenge, relyingParty: site)
        XCTAssertEqual(verified.credentialID, credentialID)
        XCTAssertEqual(verified.publicKey, coseKey)
        XCTAssertEqual(verified.algorithm, .es256)
        XCTAssertEqual(verified.attestationFormat, "none")
        XCTAssertEqual(verified.transports, ["internal"])
        XCTAssertTrue(verified.isUserVerified)
    }

    func testEveryTamperedRegistrationIsRefusedByName() {
        XCTAssertEqual(refusal(registration(clientData: clientData(type: "webauthn.create", challenge: [1, 2, 3]))), "wrong_challenge")
        XCTAssertEqual(refusal(registration(clientData: clientData(type: "webauthn.create", origin: "https://evil.example"))), "wrong_origin")
        XCTAssertEqual(refusal(registration(clientData: clientData(type: "webauthn.get"))), "wrong_type")
        XCTAssertEqual(refusal(registration(clientData: Array("not json".utf8))), "bad_client_data")
        // Found by fuzzing: a control character inside a string, which JSON forbids and only
        // Foundation's JSONDecoder let through; and whitespace no browser writes there.
        XCTAssertEqual(refusal(registration(clientData: Array(#"{"type":"webauthn.create","challenge":"\#(Base64URL.encode(challenge))","origin":"http://localhost:8080","x":"\#u{2}"}"#.utf8))), "bad_client_data")
        XCTAssertEqual(refusal(registration(clientData: Array("\n".utf8) + clientData(type: "webauthn.create"))), "bad_client_data")
        // Found by fuzzing: "origin" twice, the first this site's (what JSONDecoder reads), the
        // last another's (what most JSON readers read).
        XCTAssertEqual(refusal(registration(clientData: Array(clientData(type: "webauthn.create").dropLast())
                                            + Array(#","origin":"https://evil.example"}"#.utf8))), "bad_client_data")
        XCTAssertEqual(refusal(registration(rpID: "evil.example")), "wrong_rp_id")
        XCTAssertEqual(refusal(registration(flags: 0x44)), "user_not_present", "UP cleared")
        XCTAssertEqual(refusal(registration(flags: 0x41), requireUV: true), "user_not_verified")
        XCTAssertEqual(refusal(registration(flags: 0x41)), "accepted", "UV preferred, not required")
        XCTAssertEqual(refusal(registration(statement: [0xA1] + cborText("sig") + cborBytes([1]))), "bad_attestation",
                       "'none' with a statement")
        let response = registration()
        XCTAssertEqual(refusal(RegistrationResponse(clientDataJSON: response.clientDataJSON,
                                                    attestationObject: Array(response.attestationObject.dropLast(5)))),
                       "bad_attestation", "truncated CBOR")
        XCTAssertEqual(refusal(RegistrationResponse(clientDataJSON: response.clientDataJSON,
                                                    attestationObject: response.attestationObject + [0x00])),
                       "bad_attestation", "oversized: bytes after the object")
    }

    private func assertion(counter: UInt32, challenge: [UInt8]? = nil, flags: UInt8 = 0x05,
                           handle: [UInt8]? = nil) throws -> AssertionResponse {
        let authData = authenticatorData(flags: flags, counter: counter, attested: false)
        let client = clientData(type: "webauthn.get", challenge: challenge)
        let signature = try key.signature(for: authData + Array(SHA256.hash(data: client))).derRepresentation
        return AssertionResponse(credentialID: credentialID, clientDataJSON: client, authenticatorData: authData,
                                 signature: Array(signature), userHandle: handle ?? userHandle)
    }

    func testAnAssertionIsVerifiedAndItsCounterMustGrow() throws {
        let stored = StoredCredential(id: credentialID, publicKey: coseKey, signCount: 3, userHandle: userHandle)
        func refusal(_ response: AssertionResponse, stored: StoredCredential) -> String {
            do {
                _ = try WebAuthnCeremony.verifyAssertion(response, expectedChallenge: challenge, relyingParty: site, credential: stored)
                return "accepted"
            } catch {
                return listed(error)
            }
        }
        let verified = try WebAuthnCeremony.verifyAssertion(try assertion(counter: 4), expectedChallenge: challenge,
                                                            relyingParty: site, credential: stored)
        XCTAssertEqual(verified.signCount, 4)
        XCTAssertEqual(refusal(try assertion(counter: 3), stored: stored), "sign_count", "a counter that did not grow")
        XCTAssertEqual(refusal(try assertion(counter: 0), stored: StoredCredential(id: credentialID, publicKey: coseKey,
                                                                                     signCount: 0, userHandle: userHandle)),
                       "accepted", "an authenticator that does not count")
        XCTAssertEqual(refusal(try assertion(counter: 9, challenge: [9, 9]), stored: stored), "wrong_challenge", "a replayed assertion")
        XCTAssertEqual(refusal(try assertion(counter: 9, handle: [1, 2, 3]), stored: stored), "wrong_user")
        XCTAssertEqual(refusal(try assertion(counter: 9, flags: 0x04), stored: stored), "user_not_present")
        var flipped = try assertion(counter: 9)
        var signature = flipped.signature
        signature[signature.count - 2] ^= 0x01
        flipped = AssertionResponse(credentialID: flipped.credentialID, clientDataJSON: flipped.clientDataJSON,
                                    authenticatorData: flipped.authenticatorData, signature: signature, userHandle: flipped.userHandle)
        XCTAssertEqual(refusal(flipped, stored: stored), "bad_signature", "a flipped signature bit")
        let other = StoredCredential(id: [0xFF], publicKey: coseKey, signCount: 0, userHandle: userHandle)
        XCTAssertEqual(refusal(try assertion(counter: 9), stored: other), "unknown_credential")
    }

    func testBase64URLRoundTripsAndRefusesWhatItIsNot() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0x00, 0x3E]
        XCTAssertEqual(Base64URL.encode(bytes), "-_8APg")
        XCTAssertEqual(Base64URL.decode("-_8APg"), bytes)
        XCTAssertNil(Base64URL.decode("a=b"))
        XCTAssertNil(Base64URL.decode("!!"))
    }
}
