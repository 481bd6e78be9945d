import Crypto
import Foundation
import JWTKit
import OpenIDConnect

/// The provider the ID token seeds were signed as (make_seeds.py): its ES256 key is fixed here
/// so a seed verifies, and mutations of it reach every claim check.
enum FuzzProvider {
    static let issuer = "https://provider.example.com"
    static let clientID = "livesignup"
    static let nonce = "n-0S6_WzA2Mj"
    /// 2027-01-15T08:00:00Z: inside the seeds' validity.
    static let now = FuzzResources.now
    static let privateKey = try! P256.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0x42, count: 32))
    static let metadata = OpenIDProvider.Metadata(
        issuer: issuer, authorizationEndpoint: URL(string: issuer + "/authorize")!, tokenEndpoint: URL(string: issuer + "/token")!,
        jwksURI: URL(string: issuer + "/jwks")!, sendsSecretInBody: false, signingAlgorithms: ["ES256"])
    /// A compact ES256 JWS of `claims`, written without jwt-kit (so the seeds do not come
    /// from the library under test).
    static func sign(_ claims: [String: Any]) -> String {
        func part(_ object: [String: Any]) -> String {
            Data(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let input = part(["alg": "ES256", "typ": "JWT", "kid": "fuzz-1"]) + "." + part(claims)
        let signature = try! privateKey.signature(for: Array(input.utf8)).rawRepresentation
        return input + "." + signature.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    nonisolated(unsafe) static let keys: JWTKeyCollection = {
        let collection = JWTKeyCollection()
        let key = try! ES256PublicKey(pem: privateKey.publicKey.pemRepresentation)
        _ = try! OpenIDProvider.waitFor { await collection.add(ecdsa: key, kid: "fuzz-1") }
        return collection
    }()
}

extension FuzzTarget {
    /// A provider's discovery document (`/.well-known/openid-configuration`), as fetched.
    static let openIDDiscovery = FuzzTarget(
        name: "openid-discovery",
        summary: "an OpenID provider's discovery document: OpenIDProvider.parseMetadata"
    ) { input in
        for allowsHTTP in [false, true] {
            guard let metadata = OpenIDProvider.parseMetadata(Data(input.bytes), allowsHTTP: allowsHTTP) else { continue }
            // Every endpoint the code and the secret go to is a web URL with a host, and plain
            // http only where allowed.
            for url in [metadata.authorizationEndpoint, metadata.tokenEndpoint, metadata.jwksURI] {
                let scheme = url.scheme?.lowercased()
                fuzzCheck(scheme == "https" || (allowsHTTP && scheme == "http"), "an endpoint of scheme \(scheme ?? "none")")
                fuzzCheck(url.host?.isEmpty == false, "an endpoint without a host: \(url)")
            }
        }
    }

    /// A provider's key set (`jwks_uri`), then given to jwt-kit as the server gives it.
    static let openIDKeys = FuzzTarget(
        name: "openid-keys",
        summary: "an OpenID provider's key set: OpenIDProvider.usableKeys, JWTKeyCollection.add(jwksJSON:)"
    ) { input in
        guard let usable = OpenIDProvider.usableKeys(Data(input.bytes)) else { return }
        let object = try? JSONSerialization.jsonObject(with: Data(usable.json.utf8)) as? [String: Any]
        let keys = object?["keys"] as? [[String: Any]] ?? []
        fuzzCheck(!keys.isEmpty, "a usable set without keys")
        for key in keys {
            fuzzCheck(["RSA", "EC"].contains(key["kty"] as? String ?? ""), "a key of another type kept")
            fuzzCheck((key["use"] as? String ?? "sig") == "sig", "an encryption key kept")
        }
        let json = usable.json
        _ = try? OpenIDProvider.waitFor { try await JWTKeyCollection().add(jwksJSON: json) }
    }

    /// An ID token from a provider, checked as a sign-in through it checks it.
    static let idToken = FuzzTarget(
        name: "id-token",
        summary: "ID tokens from a provider: OpenIDProvider.keyID, checkedClaims (jwt-kit's verify inside)",
        seeds: {
            let iat = Int(FuzzProvider.now.timeIntervalSince1970) - 30
            let good: [String: Any] = ["iss": FuzzProvider.issuer, "aud": FuzzProvider.clientID, "sub": "248289761001",
                                       "nonce": FuzzProvider.nonce, "iat": iat, "exp": iat + 600]
            var twoAudiences = good
            twoAudiences["aud"] = [FuzzProvider.clientID, "other"]
            twoAudiences["azp"] = FuzzProvider.clientID
            var wrongNonce = good
            wrongNonce["nonce"] = "another"
            return [("good", good), ("two-audiences", twoAudiences), ("wrong-nonce", wrongNonce)].map { name, claims in
                (name, Array(FuzzProvider.sign(claims).utf8))
            }
        }
    ) { input in
        let token = input.text
        guard (try? OpenIDProvider.keyID(ofToken: token, metadata: FuzzProvider.metadata)) != nil else { return }
        guard let claims = try? OpenIDProvider.checkedClaims(
            token, keys: FuzzProvider.keys, metadata: FuzzProvider.metadata, clientID: FuzzProvider.clientID,
            nonce: FuzzProvider.nonce, now: FuzzProvider.now) else { return }
        // A token accepted is one the provider's key signed: its payload is that of a seed,
        // whatever else was changed, and it says what was asked.
        fuzzCheck(claims.iss.value == FuzzProvider.issuer && claims.aud.value.contains(FuzzProvider.clientID)
                  && claims.nonce == FuzzProvider.nonce, "accepted a token for another issuer, audience or nonce")
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        fuzzCheck(parts.count == 3, "accepted a token that is not three parts")
        let signingInput = Array((parts[0] + "." + parts[1]).utf8)
        let signature = Base64URLFuzz.decode(String(parts[2])).flatMap { try? P256.Signing.ECDSASignature(rawRepresentation: $0) }
        fuzzCheck(signature.map { FuzzProvider.privateKey.publicKey.isValidSignature($0, for: signingInput) } == true,
                  "accepted a token whose signature swift-crypto does not verify")
    }
}

/// base64url without padding, strictly (RFC 7515 §2): the reference reading of a JWT's parts.
enum Base64URLFuzz {
    static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 95 })
        else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }
}
