import Crypto
import Foundation
import WebAuthn
import XCTest

/// Real responses from Chromium's virtual authenticator (Fixtures/README.md), which the
/// reference verifier py_webauthn accepted: ours accepts them too, and refuses each mutation
/// with its reason.
final class ChromiumResponsesTests: XCTestCase {
    private struct Recorded: Decodable {
        struct Registration: Decodable {
            struct Response: Decodable {
                let clientDataJSON: String
                let attestationObject: String
                let transports: [String]?
            }
            let id: String
            let response: Response
        }
        struct Assertion: Decodable {
            struct Response: Decodable {
                let clientDataJSON: String
                let authenticatorData: String
                let signature: String
                let userHandle: String?
            }
            let id: String
            let response: Response
        }
        let origin: String
        let rpId: String
        let registration: Registration
        let assertion: Assertion
    }

    private let registrationChallenge = (0..<32).map { UInt8($0) }
    private let assertionChallenge = (0..<32).map { UInt8(100 + $0) }
    private let userHandle = (0..<16).map { UInt8(255 - $0) }

    private func recorded() throws -> [String: Recorded] {
        let url = try XCTUnwrap(Bundle.module.url(forResource: "chromium-virtual-authenticator", withExtension: "json"))
        return try JSONDecoder().decode([String: Recorded].self, from: Data(contentsOf: url))
    }

    private func bytes(_ text: String?) throws -> [UInt8] {
        try XCTUnwrap(text.flatMap(Base64URL.decode))
    }

    func testChromiumsRegistrationsAndAssertionsVerifyForEachAlgorithm() throws {
        for (algorithm, record) in try recorded() {
            let site = RelyingParty(id: record.rpId, origins: [record.origin])
            let registration = try WebAuthnCeremony.verifyRegistration(
                RegistrationResponse(clientDataJSON: try bytes(record.registration.response.clientDataJSON),
                                     attestationObject: try bytes(record.registration.response.attestationObject),
                                     transports: record.registration.response.transports ?? []),
                expectedChallenge: registrationChallenge, relyingParty: site, requireUserVerification: true)
            XCTAssertEqual(registration.algorithm.rawValue, Int(algorithm))
            XCTAssertEqual(registration.credentialID, try bytes(record.registration.id))
            XCTAssertEqual(registration.attestationFormat, "none")
            let stored = StoredCredential(id: registration.credentialID, publicKey: registration.publicKey,
                                          signCount: registration.signCount, userHandle: userHandle)
            let assertion = try assertionResponse(record)
            let verified = try WebAuthnCeremony.verifyAssertion(assertion, expectedChallenge: assertionChallenge,
                                                                relyingParty: site, credential: stored)
            XCTAssertGreaterThan(verified.signCount, registration.signCount, algorithm)
        }
    }

    private func assertionResponse(_ record: Recorded, signature: [UInt8]? = nil, authenticatorData: [UInt8]? = nil) throws
        -> AssertionResponse {
        AssertionResponse(credentialID: try bytes(record.assertion.id),
                          clientDataJSON: try bytes(record.assertion.response.clientDataJSON),
                          authenticatorData: try authenticatorData ?? bytes(record.assertion.response.authenticatorData),
                          signature: try signature ?? bytes(record.assertion.response.signature),
                          userHandle: try record.assertion.response.userHandle.map { try bytes($0) })
    }

    func testMutatedResponsesAreRefusedEachWithItsReason() throws {
        let record = try XCTUnwrap(try recorded()["-7"])
        let site = RelyingParty(id: record.rpId, origins: [record.origin])
        let clientData = try bytes(record.registration.response.clientDataJSON)
        let attestation = try bytes(record.registration.response.attestationObject)
        func registrationRefusal(_ response: RegistrationResponse, challenge: [UInt8]? = nil, site: RelyingParty? = nil) -> String {
            do {
                _ = try WebAuthnCeremony.verifyRegistration(response, expectedChallenge: challenge ?? registrationChallenge,
                                                           relyingParty: site ?? RelyingParty(id: record.rpId, origins: [record.origin]))
                return "accepted"
            } catch {
                return listed(error)
            }
        }
        let original = RegistrationResponse(clientDataJSON: clientData, attestationObject: attestation)
        XCTAssertEqual(registrationRefusal(original), "accepted")
        XCTAssertEqual(registrationRefusal(original, site: RelyingParty(id: record.rpId, origins: ["https://evil.example"])),
                       "wrong_origin", "another origin")
        XCTAssertEqual(registrationRefusal(original, challenge: assertionChallenge), "wrong_challenge", "another challenge")
        XCTAssertEqual(registrationRefusal(original, site: RelyingParty(id: "example.org", origins: [record.origin])),
                       "wrong_rp_id", "a wrong rpIdHash")
        XCTAssertEqual(registrationRefusal(RegistrationResponse(clientDataJSON: clientData, attestationObject: Array(attestation.prefix(40)))),
                       "bad_attestation", "truncated CBOR")
        XCTAssertEqual(registrationRefusal(RegistrationResponse(clientDataJSON: clientData,
                                                                attestationObject: attestation + [UInt8](repeating: 0, count: 20_000))),
                       "bad_attestation", "oversized CBOR")

        let registration = try WebAuthnCeremony.verifyRegistration(original, expectedChallenge: registrationChallenge, relyingParty: site)
        let stored = StoredCredential(id: registration.credentialID, publicKey: registration.publicKey,
                                      signCount: registration.signCount, userHandle: userHandle)
        func assertionRefusal(_ response: AssertionResponse, challenge: [UInt8]? = nil) -> String {
            do {
                _ = try WebAuthnCeremony.verifyAssertion(response, expectedChallenge: challenge ?? assertionChallenge,
                                                        relyingParty: site, credential: stored)
                return "accepted"
            } catch {
                return listed(error)
            }
        }
        XCTAssertEqual(assertionRefusal(try assertionResponse(record)), "accepted")
        XCTAssertEqual(assertionRefusal(try assertionResponse(record), challenge: registrationChallenge), "wrong_challenge",
                       "a replayed challenge")
        var signature = try bytes(record.assertion.response.signature)
        signature[signature.count / 2] ^= 0x01
        XCTAssertEqual(assertionRefusal(try assertionResponse(record, signature: signature)), "bad_signature", "a flipped signature bit")
        var data = try bytes(record.assertion.response.authenticatorData)
        data[32] &= ~0x01
        XCTAssertEqual(assertionRefusal(try assertionResponse(record, authenticatorData: data)), "user_not_present", "UP cleared")
        data = try bytes(record.assertion.response.authenticatorData)
        data[0] ^= 0xFF
        XCTAssertEqual(assertionRefusal(try assertionResponse(record, authenticatorData: data)), "wrong_rp_id", "a wrong rpIdHash")
    }
}
