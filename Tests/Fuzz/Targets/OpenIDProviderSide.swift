import Foundation
import Identity
import MicroHTTPD
import SignupDomain
import SignupSQLite

/// Two applications as the policy declares them: a confidential one (its secret below) and a
/// public one. "Kiosk" has a K: an id is compared as the bytes registered.
private let clients: [String: ClientDeclaration] = {
    var web = ClientDeclaration(id: "app", name: "App", redirectURIs: ["https://app.example.com/callback"])
    web.secretVariable = "APP_SECRET"
    let kiosk = ClientDeclaration(id: "Kiosk", name: "Kiosk", redirectURIs: ["http://127.0.0.1:8000/cb?x=1"])
    return [web.id: web, kiosk.id: kiosk]
}()
private let secret = "s3cret-s3cret-s3cret-s3cret-s3cret"

/// The provider's token endpoint; its store is a throwaway SQLite file, never touched by
/// client authentication (what this target reads).
private let server: AuthorizationServer = {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-fuzz-\(getpid()).sqlite").path
    guard let store = try? SQLiteAccountStore(path: path) else { fatalError("cannot open \(path)") }
    let now: @Sendable () -> Date = { FuzzResources.now }
    return AuthorizationServer(
        store: store, signingKeys: SigningKeys(store: store, tokenLifetime: SigningKeys.defaultTokenLifetime, now: now),
        clients: clients.values.map { RegisteredClient(declaration: $0, secret: $0.isPublic ? nil : secret) },
        issuer: { "https://signup.example.com" }, subjectKey: [UInt8](repeating: 3, count: 32), now: now)
}()

extension FuzzTarget {
    /// `/oauth2/authorize`'s query (or the consent form's copy of it), as libmicrohttpd hands
    /// over its pairs.
    static let authorizeRequest = FuzzTarget(
        name: "authorize-request",
        summary: "OpenID authorization requests: AuthorizationRequest.read, answer(at:)"
    ) { input in
        guard let form = try? URLEncodedForm(decoding: input.bytes) else { return }
        let pairs = form.fields
        let bytes = pairs.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 2 }
        let request: AuthorizationRequest
        do throws(AuthorizationRequest.Refusal) {
            request = try AuthorizationRequest.read(pairs, queryBytes: bytes, clients: clients)
        } catch {
            if case .toClient(let refusal) = error {
                // Told to the application only at a redirect URI registered for it, byte for byte.
                fuzzCheck(clients.values.contains { $0.redirectURIs.contains { Array($0.utf8) == Array(refusal.redirectURI.utf8) } },
                          "a refusal sent to an unregistered redirect URI")
            }
            return
        }
        let said = { (name: String) in pairs.filter { $0.name.utf8.elementsEqual(name.utf8) }.map(\.value) }
        fuzzCheck(said("client_id") == [request.client.id].map { $0 }, "a client found under another spelling of its id: \(said("client_id"))")
        fuzzCheck(request.client.redirectURIs.contains { Array($0.utf8) == Array(request.redirectURI.utf8) }, "an unregistered redirect URI")
        fuzzCheck(Set(request.scopes).isSubset(of: request.client.scopes) && Set(request.scopes).count == request.scopes.count,
                  "scopes beyond the client's, or repeated")
        for value in [request.state, request.nonce, request.loginHint].compactMap({ $0 }) {
            fuzzCheck(value.utf8.count <= AuthorizationRequest.maximumValueBytes, "a value over its bound")
        }
        if let challenge = request.codeChallenge {
            fuzzCheck(challenge.utf8.count == 43 && challenge.utf8.allSatisfy {
                (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 95
            }, "a code challenge that is not 43 base64url bytes: \(Array(challenge.utf8))")
        }
        fuzzCheck(!request.client.isPublic || request.codeChallenge != nil, "a public client without PKCE")
        fuzzCheck(!request.prompts.contains(.none) || request.prompts.count == 1, "prompt=none with another prompt")
        // The answer carries every value back exactly (the code, the state), after the
        // registered URI's own query.
        let answer = request.redirect([("code", "c0de")], issuer: "https://signup.example.com")
        fuzzCheck(answer.hasPrefix(request.redirectURI), "an answer not at the redirect URI")
        let items = URLComponents(string: answer)?.queryItems ?? []
        fuzzCheck(items.first { $0.name == "state" }?.value == request.state, "the state did not come back as sent")
    }

    /// What an application sends the token endpoint to say who it is: HTTP Basic or the form.
    static let tokenRequest = FuzzTarget(
        name: "token-request",
        summary: "token endpoint client authentication: AuthorizationServer.basic, formDecoded, authenticate"
    ) { input in
        let parts = input.texts(2)
        let authorization = parts[0]
        if let (id, secretSent) = AuthorizationServer.basic(authorization) {
            // RFC 7617: the user-id is everything before the first colon, and has none.
            fuzzCheck(!id.utf8.contains(UInt8(ascii: ":")), "a Basic user-id holding a colon")
            let encoded = authorization.dropFirst(6).trimmingCharacters(in: .whitespaces)
            let decoded = Data(base64Encoded: encoded).map { String(decoding: $0, as: UTF8.self) }
            fuzzCheck(decoded == id + ":" + secretSent, "the two halves are not the header's text")
        }
        if let decoded = AuthorizationServer.formDecoded(parts[1]) {
            fuzzCheck(AuthorizationServer.formDecoded(AuthorizationRequest.encode(decoded)) == decoded, "form decoding does not round-trip")
        }
        guard let form = try? URLEncodedForm(decoding: Array(parts[1].utf8)) else { return }
        do throws(AuthorizationServer.TokenError) {
            let client = try server.authenticate(authorization: authorization.isEmpty ? nil : authorization) { form[$0] }
            // A confidential client is believed only with its secret, in one reading or the other.
            if !client.declaration.isPublic {
                let readings = [form["client_secret"], AuthorizationServer.basic(authorization)?.secret,
                                AuthorizationServer.basic(authorization).flatMap { AuthorizationServer.formDecoded($0.secret) }]
                fuzzCheck(readings.contains(secret), "a confidential client authenticated without its secret")
            }
        } catch {
            fuzzCheck(error.code == "invalid_request" || error.code == "invalid_client", "refused as \(error.code)")
        }
    }
}
