import _CryptoExtras
import Foundation
import JWTKit
import SignupDomain
import WebAuthn

/// The OpenID provider's signing keys (issue 56), kept in the account store like the other
/// keys, so every instance signs with the same key and publishes the same key set. A first
/// key is made at the first start; `rotate` adds the next one, published at once and signing
/// only after `publishLead`, so a relying party's cached key set already holds it; the old
/// key stays published until the tokens it signed have expired (`SigningKeyRing`).
/// jwt-kit makes and holds the keys (ES256 over swift-crypto; RS256, 2,048 bits, through
/// swift-crypto's RSA, only while an application asks for it); nothing here signs by hand.
/// Each algorithm is a ring of its own: a rotation rotates every one in use.
package struct SigningKeys: Sendable {
    package let store: any AccountStore
    /// The longest a token signed by a key lives: how long a replaced key stays published.
    package let tokenLifetime: TimeInterval
    package let now: @Sendable () -> Date

    package init(store: any AccountStore, tokenLifetime: TimeInterval, now: @escaping @Sendable () -> Date) {
        self.store = store
        self.tokenLifetime = tokenLifetime
        self.now = now
    }

    /// An hour: the ID and access tokens to come live no longer (issue 56; a setting once
    /// their lifetimes are).
    package static let defaultTokenLifetime: TimeInterval = 3600

    /// What ID tokens may be signed with: ES256 for everyone, RS256 for applications that
    /// cannot verify anything else (`id_token_signed_response_alg`).
    package static let algorithms = ["ES256", "RS256"]

    /// The algorithms `clients` need keys of: ES256 always, RS256 when one asks for it (an
    /// RSA key costs a moment to make, so it is made only then).
    package static func algorithms(for clients: [ClientDeclaration]) -> [String] {
        algorithms.filter { algorithm in algorithm == "ES256" || clients.contains { $0.idTokenAlgorithm == algorithm } }
    }

    /// The stored keys of one algorithm as a ring.
    package func ring(_ algorithm: String = "ES256") throws -> SigningKeyRing {
        SigningKeyRing(try store.signingKeys().filter { $0.algorithm == algorithm })
    }

    /// At start: a first key of each of `algorithms` the store has none of, signing at once
    /// (no relying party can have cached a key set without it). Two instances starting
    /// together may both make one; both are published and every instance signs with the
    /// same (`SigningKeyRing.signer`).
    package func ensureKeys(_ algorithms: [String] = ["ES256"]) throws {
        let stored = Set(try store.signingKeys().map(\.algorithm))
        // Whole seconds, down: the store keeps what it is given to the millisecond at best,
        // and a time rounded up would leave no key signing until the clock caught up.
        let time = Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down))
        for algorithm in algorithms where !stored.contains(algorithm) {
            try store.addSigningKey(try Self.make(algorithm, at: time, signsFrom: time))
        }
    }

    /// Adds the next key of every algorithm in use (ES256 always): published now, signing
    /// from `publishLead` later.
    @discardableResult
    package func rotate(publishLead: TimeInterval) throws -> [SigningKey] {
        let time = Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down))
        let inUse = Set(try store.signingKeys().map(\.algorithm)).union(["ES256"])
        return try Self.algorithms.filter(inUse.contains).map { algorithm in
            let key = try Self.make(algorithm, at: time, signsFrom: time.addingTimeInterval(publishLead))
            try store.addSigningKey(key)
            return key
        }
    }

    /// Forgets the keys no token alive can name; how many.
    package func forgetExpired() throws -> Int {
        let expired = try Self.algorithms.flatMap { try ring($0).expired(at: now(), tokenLifetime: tokenLifetime) }
        try store.removeSigningKeys(ids: expired.map(\.id))
        return expired.count
    }

    /// Every key the key set publishes now, of every algorithm.
    package func published() throws -> [SigningKey] {
        try Self.algorithms.flatMap { try ring($0).published(at: now(), tokenLifetime: tokenLifetime) }
    }

    /// The public key set (RFC 7517), as `/.well-known/jwks.json` serves it.
    package func keySet() throws -> [UInt8] {
        let keys = try published().map { key -> PublicJWK in
            switch key.algorithm {
            case "RS256":
                let (modulus, exponent) = try Insecure.RSA.PrivateKey(pem: key.privateKeyPEM).publicKey.getKeyPrimitives()
                return PublicJWK(kty: "RSA", kid: key.id, use: "sig", alg: key.algorithm, n: Base64URL.encode(Array(modulus)),
                                 e: Base64URL.encode(Array(exponent)))
            default:
                let parameters = try ES256PrivateKey(pem: key.privateKeyPEM).publicKey.parameters
                guard let parameters else { throw StorageFault("the signing key \(key.id) has no public point") }
                return PublicJWK(kty: "EC", kid: key.id, use: "sig", alg: key.algorithm, crv: "P-256", x: parameters.x, y: parameters.y)
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(KeySet(keys: keys)))
    }

    /// A new key of `algorithm` with a random id.
    static func make(_ algorithm: String, at time: Date, signsFrom: Date) throws -> SigningKey {
        let id = Base64URL.encode((0..<12).map { _ in UInt8.random(in: 0...255) })
        let pem = algorithm == "RS256"
            ? try Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048)).pemRepresentation
            : ES256PrivateKey().pemRepresentation
        return SigningKey(id: id, algorithm: algorithm, privateKeyPEM: pem, createdAt: time, signsFrom: signsFrom)
    }

    private struct KeySet: Encodable {
        let keys: [PublicJWK]
    }

    private struct PublicJWK: Encodable {
        let kty, kid, use, alg: String
        var crv, x, y, n, e: String?

        init(kty: String, kid: String, use: String, alg: String, crv: String? = nil, x: String? = nil, y: String? = nil,
             n: String? = nil, e: String? = nil) {
            (self.kty, self.kid, self.use, self.alg, self.crv, self.x, self.y, self.n, self.e) = (kty, kid, use, alg, crv, x, y, n, e)
        }
    }
}
