import Foundation
import HTTPTestSupport
import LiveSignupClient
import SignupDomain
@testable import SignupServer
@testable import WebKernel
import SignupWire
import WebAuthn
import WebAuthnTestSupport
import XCTest

/// Issue 40, item 1: CBOR from people nobody knows yet reaches the decoder on three routes
/// (the form's passkey, an added passkey, a passkey sign-in), and libcbor 0.8 allocates a
/// container's declared length at its header: `9a 08000000` alone cost a GiB. Each hostile
/// shape is answered with its reason, the process's peak RSS stays within a few MiB (reset
/// through /proc/self/clear_refs before each batch), and a person signing up meanwhile is not
/// disturbed.
final class HostileCBORTests: XCTestCase {
    private var server: TestServer!
    private static let site = "https://signup.example.com"

    /// Declared lengths the bytes cannot hold, in every container and string shape, nested,
    /// behind a tag, inside indefinite lengths.
    static let hostile: [String: [UInt8]] = [
        "array 2^27": [0x9A, 0x08, 0x00, 0x00, 0x00],
        "array 2^32": [0x9B, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00],
        "map 2^27": [0xBA, 0x08, 0x00, 0x00, 0x00],
        "bytes 2 GiB": [0x5A, 0x7F, 0xFF, 0xFF, 0xFF],
        "text 2 GiB": [0x7A, 0x7F, 0xFF, 0xFF, 0xFF],
        "nested arrays": [0x83] + Array([[UInt8]](repeating: [0x9A, 0x00, 0x10, 0x00, 0x00], count: 3).joined()),
        "map holding an array": [0xA1, 0x01, 0x9A, 0x08, 0x00, 0x00, 0x00],
        "indefinite array holding one": [0x9F, 0x9A, 0x08, 0x00, 0x00, 0x00],
        "indefinite string chunk": [0x5F, 0x5A, 0x7F, 0xFF, 0xFF, 0xFF],
        "tagged": [0xD8, 0x18, 0x9A, 0x08, 0x00, 0x00, 0x00],
        "indefinite nesting": [UInt8](repeating: 0x9F, count: 40),
    ]

    override func setUpWithError() throws {
        server = try TestServer {
            $0.publicOrigins = [Self.site]
            $0.limits = .none
        }
    }

    override func tearDown() {
        server.stop()
    }

    private func post(_ path: String, _ fields: [(String, String)], cookie: String? = nil) async throws
        -> (status: Int, headers: [String: String], body: String) {
        try await server.postFromScript(of: Self.site, path, fields, cookie: cookie)
    }

    private static func reason(_ body: String) -> String {
        let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return object?["reason"] as? String ?? "none: \(body)"
    }

    /// A form with a username typed and a passkey chosen, and its creation options.
    private func formWithOptions(_ username: String) async throws
        -> (form: FormSession, options: String, cookie: String?) {
        let form = try await server.client.openForm()
        _ = try await form.edit("username", to: username, touched: true)
        _ = try await form.edit("email", to: "\(username)@example.org", touched: true)
        _ = try await form.edit(CredentialMethod.fieldName, to: "passkey")
        let options = try await post("/passkeys/options?token=\(form.token)", [("token", form.token)])
        XCTAssertEqual(options.status, 200, options.body)
        return (form, options.body, PasskeyServerTests.browserCookie(options.headers))
    }

    private func register(_ form: FormSession, options: String, cookie: String?,
                          with authenticator: SoftwareAuthenticator) async throws
        -> (status: Int, headers: [String: String], body: String) {
        let response = try authenticator.register(options: options, origin: Self.site)
        return try await post("/passkeys/register?token=\(form.token)", [("token", form.token), ("response", response)],
                              cookie: cookie)
    }

    /// A person with a passkey account, signed in: the control, and the account for the
    /// sign-in and add routes.
    private func passkeyAccount(_ username: String) async throws -> (authenticator: SoftwareAuthenticator, handle: [UInt8], cookie: String) {
        let (form, options, browser) = try await formWithOptions(username)
        let authenticator = SoftwareAuthenticator()
        let made = try await register(form, options: options, cookie: browser, with: authenticator)
        XCTAssertEqual(made.status, 201, made.body)
        let created = try await server.request("POST", "/signup", body: FormURLEncoder.encode([
            ("token", form.token), ("username", username), ("email", "\(username)@example.org"), ("credential", "passkey"),
        ]))
        XCTAssertEqual(created.status, 303, created.body)
        let account = try XCTUnwrap(try server.store.account(named: username))
        let cookie = try XCTUnwrap(created.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        return (authenticator, try server.store.userHandle(ofAccount: account.id), cookie)
    }

    func testHostileAttestationObjectsOnTheFormAreRefusedWithoutMemory() async throws {
        var prepared: [(String, FormSession, String, String?)] = []
        for (index, name) in Self.hostile.keys.sorted().enumerated() {
            let (form, options, cookie) = try await formWithOptions("hostile_\(index)")
            prepared.append((name, form, options, cookie))
        }
        let growth = try await PeakMemory.growth {
            for (name, form, options, cookie) in prepared {
                let authenticator = SoftwareAuthenticator()
                authenticator.attestationObject = Self.hostile[name]
                let answer = try await register(form, options: options, cookie: cookie, with: authenticator)
                XCTAssertEqual(answer.status, 422, "\(name): \(answer.body)")
                XCTAssertEqual(Self.reason(answer.body), "bad_attestation", name)
            }
        }
        XCTAssertLessThan(growth, 8 * 1024, "the peak RSS rose \(growth) KiB")
    }

    func testHostileKeysAndExtensionsInsideAuthenticatorDataAreRefusedWithoutMemory() async throws {
        var prepared: [(String, Bool, FormSession, String, String?)] = []
        for (index, name) in Self.hostile.keys.sorted().enumerated() {
            for asKey in [true, false] {
                let (form, options, cookie) = try await formWithOptions("inner_\(index)_\(asKey ? "k" : "e")")
                prepared.append((name, asKey, form, options, cookie))
            }
        }
        let growth = try await PeakMemory.growth {
            for (name, asKey, form, options, cookie) in prepared {
                let authenticator = SoftwareAuthenticator()
                if asKey { authenticator.publicKeyBytes = Self.hostile[name] } else { authenticator.extensionBytes = Self.hostile[name] }
                let answer = try await register(form, options: options, cookie: cookie, with: authenticator)
                XCTAssertEqual(answer.status, 422, "\(name): \(answer.body)")
                XCTAssertEqual(Self.reason(answer.body), asKey ? "bad_key" : "bad_authenticator_data", name)
            }
        }
        XCTAssertLessThan(growth, 8 * 1024, "the peak RSS rose \(growth) KiB")
    }

    /// Fifty hostile registrations at once while a person makes a passkey account and signs
    /// in with it: the fifty get their reason, the person gets their account.
    func testFiftyAtOnceCostNoMemoryAndAPersonSigningUpMeanwhileIsServed() async throws {
        var prepared: [(FormSession, String, String?)] = []
        for index in 0..<50 {
            prepared.append(try await formWithOptions("flood_\(index)"))
        }
        let payload = Self.hostile["array 2^27"]!
        let baseURL = server.baseURL, site = Self.site
        let growth = try await PeakMemory.growth {
            try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for (form, options, cookie) in prepared {
                    let token = form.token, cookie = cookie ?? ""
                    group.addTask {
                        let authenticator = SoftwareAuthenticator()
                        authenticator.attestationObject = payload
                        let response = try authenticator.register(options: options, origin: site)
                        let answer = try await TestServer.request(
                            to: baseURL, "POST", "/passkeys/register?token=\(token)",
                            body: FormURLEncoder.encode([("token", token), ("response", response)]),
                            headers: ["Origin": site, "Accept": "application/json", "Cookie": cookie])
                        return (answer.status, HostileCBORTests.reason(answer.body))
                    }
                }
                let control = try await passkeyAccount("control_person")
                let auth = try await server.request("GET", "/auth", headers: ["Cookie": control.cookie])
                XCTAssertEqual(auth.headers["x-auth-request-user"], "control_person", "the person was served")
                for try await (status, reason) in group {
                    XCTAssertEqual(status, 422)
                    XCTAssertEqual(reason, "bad_attestation")
                }
            }
        }
        XCTAssertLessThan(growth, 32 * 1024, "the peak RSS rose \(growth) KiB")
    }

    /// The sign-in route decodes the authenticator data before the signature is checked:
    /// hostile bytes there cost nothing either, and a sign-in without a user handle (a
    /// discoverable sign-in must name its account, WebAuthn L3 §7.2) is refused (item 12).
    func testHostileSignInsAreRefusedWithoutMemoryAndTheOwnerStillSignsIn() async throws {
        let owner = try await passkeyAccount("signin_owner")
        var answers: [(String, Int, String)] = []
        let growth = try await PeakMemory.growth {
            for (name, bytes) in Self.hostile.sorted(by: { $0.key < $1.key }) {
                for asKey in [true, false] {
                    let options = try await post("/passkeys/signin/options", [])
                    let forged = SoftwareAuthenticator(credentialID: owner.authenticator.credentialID)
                    if asKey { forged.publicKeyBytes = bytes } else { forged.extensionBytes = bytes }
                    let assertion = try forged.assert(options: options.body, origin: Self.site, userHandle: owner.handle)
                    let answer = try await post("/passkeys/signin", [("response", assertion)])
                    answers.append((name + (asKey ? " as the key" : " as extensions"), answer.status, Self.reason(answer.body)))
                }
            }
        }
        for (name, status, reason) in answers {
            XCTAssertEqual(status, 401, name)
            XCTAssertTrue(["bad_key", "bad_authenticator_data"].contains(reason), "\(name): \(reason)")
        }
        XCTAssertLessThan(growth, 8 * 1024, "the peak RSS rose \(growth) KiB")

        let options = try await post("/passkeys/signin/options", [])
        owner.authenticator.omitsUserHandle = true
        let anonymous = try await post("/passkeys/signin", [
            ("response", try owner.authenticator.assert(options: options.body, origin: Self.site, userHandle: owner.handle)),
        ])
        XCTAssertEqual(anonymous.status, 401, anonymous.body)
        XCTAssertEqual(Self.reason(anonymous.body), "missing_user_handle")

        owner.authenticator.omitsUserHandle = false
        let again = try await post("/passkeys/signin/options", [])
        let signedIn = try await post("/passkeys/signin", [
            ("response", try owner.authenticator.assert(options: again.body, origin: Self.site, userHandle: owner.handle)),
        ])
        XCTAssertEqual(signedIn.status, 200, "the owner still signs in: \(signedIn.body)")
    }

    func testHostileAttestationsOfAnAddedPasskeyAreRefusedWithoutMemory() async throws {
        let owner = try await passkeyAccount("adding_owner")
        var answers: [(String, Int, String)] = []
        let growth = try await PeakMemory.growth {
            for (name, bytes) in Self.hostile.sorted(by: { $0.key < $1.key }) {
                let options = try await post("/account/passkeys/options", [], cookie: owner.cookie)
                XCTAssertEqual(options.status, 200, options.body)
                let authenticator = SoftwareAuthenticator()
                authenticator.attestationObject = bytes
                let answer = try await post("/account/passkeys", [
                    ("response", try authenticator.register(options: options.body, origin: Self.site)),
                ], cookie: owner.cookie)
                answers.append((name, answer.status, Self.reason(answer.body)))
            }
        }
        for (name, status, reason) in answers {
            XCTAssertEqual(status, 422, name)
            XCTAssertEqual(reason, "bad_attestation", name)
        }
        XCTAssertLessThan(growth, 8 * 1024, "the peak RSS rose \(growth) KiB")
        let account = try XCTUnwrap(try server.store.account(named: "adding_owner"))
        XCTAssertEqual(try server.store.passkeys(ofAccount: account.id).count, 1, "nothing was added")
    }

    /// The passkey routes spend a per-address allowance before any decoding.
    func testThePasskeyRoutesSpendAPerAddressLimit() async throws {
        let limited = try TestServer {
            $0.publicOrigins = [Self.site]
            $0.limits = .none
            $0.limits.passkeysPerAddress = Rate(burst: 3, perSecond: 1.0 / 3600)
        }
        defer { limited.stop() }
        var statuses: [Int] = []
        var last = ""
        for path in ["/passkeys/register", "/passkeys/signin", "/account/passkeys", "/passkeys/register"] {
            let answer = try await limited.request("POST", path, body: FormURLEncoder.encode([("token", "x"), ("response", "{}")]),
                                                   headers: ["Origin": Self.site, "Accept": "application/json"])
            statuses.append(answer.status)
            last = answer.body
        }
        XCTAssertEqual(statuses.last, 429, "the fourth ceremony from one address waits: \(statuses)")
        XCTAssertFalse(statuses.dropLast().contains(429), "\(statuses)")
        XCTAssertTrue(last.contains("\"limit\":\"passkeys\""), last)
    }
}
