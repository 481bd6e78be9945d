import Foundation
import JWTKit
import SignupDomain
import WebAuthn

/// The OpenID provider's signing keys (issue 56), kept in the account store like the other
/// keys, so every instance signs with the same key and publishes the same key set. A first
/// key is made at the first start; `rotate` adds the next one, published at once and signing
/// only after `publishLead`, so a relying party's cached key set already holds it; the old
/// key stays published until the tokens it signed have expired (`SigningKeyRing`).
/// jwt-kit makes and holds the keys (ES256 over swift-crypto); nothing here signs by hand.
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

    /// The stored keys as a ring.
    package func ring() throws -> SigningKeyRing { SigningKeyRing(try store.signingKeys()) }

    /// At start: a first key when the store has none, signing at once (no relying party can
    /// have cached a key set without it). Two instances starting together may both make one;
    /// both are published and every instance signs with the same (`SigningKeyRing.signer`).
    package func ensureKey() throws {
        guard try store.signingKeys().isEmpty else { return }
        // Whole seconds, down: the store keeps what it is given to the millisecond at best,
        // and a time rounded up would leave no key signing until the clock caught up.
        let time = Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down))
        try store.addSigningKey(Self.make(at: time, signsFrom: time))
    }

    /// Adds the next key: published now, signing from `publishLead` later.
    @discardableResult
    package func rotate(publishLead: TimeInterval) throws -> SigningKey {
        let time = Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down))
        let key = Self.make(at: time, signsFrom: time.addingTimeInterval(publishLead))
        try store.addSigningKey(key)
        return key
    }

    /// Forgets the keys no token alive can name; how many.
    package func forgetExpired() throws -> Int {
        let expired = try ring().expired(at: now(), tokenLifetime: tokenLifetime)
        try store.removeSigningKeys(ids: expired.map(\.id))
        return expired.count
    }

    /// The public key set (RFC 7517), as `/.well-known/jwks.json` serves it.
    package func keySet() throws -> [UInt8] {
        let published = try ring().published(at: now(), tokenLifetime: tokenLifetime)
        let keys = try published.map { key -> PublicJWK in
            let parameters = try ES256PrivateKey(pem: key.privateKeyPEM).publicKey.parameters
            guard let parameters else { throw StorageFault("the signing key \(key.id) has no public point") }
            return PublicJWK(kty: "EC", crv: "P-256", x: parameters.x, y: parameters.y, kid: key.id, use: "sig", alg: key.algorithm)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(KeySet(keys: keys)))
    }

    /// A new ES256 key with a random id.
    static func make(at time: Date, signsFrom: Date) -> SigningKey {
        let id = Base64URL.encode((0..<12).map { _ in UInt8.random(in: 0...255) })
        return SigningKey(id: id, algorithm: "ES256", privateKeyPEM: ES256PrivateKey().pemRepresentation, createdAt: time,
                          signsFrom: signsFrom)
    }

    private struct KeySet: Encodable {
        let keys: [PublicJWK]
    }

    private struct PublicJWK: Encodable {
        let kty, crv, x, y, kid, use, alg: String
    }
}
