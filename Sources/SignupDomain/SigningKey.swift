import Foundation

/// A key LiveSignup's OpenID provider signs with (issue 56), kept in the account store so
/// every instance signs with the same one and publishes the same key set. It is published
/// from `createdAt` and signs from `signsFrom`: a rotation makes the new key public before it
/// signs, so a relying party that cached the key set meets no unknown key.
public struct SigningKey: Sendable, Equatable {
    /// The `kid` in the key set and in every token's header.
    public let id: String
    /// `ES256`.
    public let algorithm: String
    /// The private key, PKCS #8 PEM (never leaves the store and this process).
    public let privateKeyPEM: String
    public let createdAt: Date
    public let signsFrom: Date

    public init(id: String, algorithm: String, privateKeyPEM: String, createdAt: Date, signsFrom: Date) {
        self.id = id
        self.algorithm = algorithm
        self.privateKeyPEM = privateKeyPEM
        self.createdAt = createdAt
        self.signsFrom = signsFrom
    }
}

/// Which of the stored keys signs now, and which the key set publishes: every key from its
/// creation until what it signed has expired, that is until `tokenLifetime` after the next
/// key took over.
public struct SigningKeyRing: Sendable, Equatable {
    /// By `signsFrom`, then by id (two instances that made a first key at once agree).
    public let keys: [SigningKey]

    public init(_ keys: [SigningKey]) {
        self.keys = keys.sorted { ($0.signsFrom, $0.id) < ($1.signsFrom, $1.id) }
    }

    /// The newest key whose time to sign has come; nil before any has.
    public func signer(at now: Date) -> SigningKey? {
        keys.last { $0.signsFrom <= now }
    }

    /// The keys a relying party may meet: the waiting ones, the signer, and the ones before it
    /// whose tokens may still be alive.
    public func published(at now: Date, tokenLifetime: TimeInterval) -> [SigningKey] {
        keys.enumerated().filter { index, _ in
            let next = keys.dropFirst(index + 1).first { $0.signsFrom <= now }
            guard let next else { return true }
            return now < next.signsFrom.addingTimeInterval(tokenLifetime)
        }.map(\.element)
    }

    /// The keys no token alive can name any more: the store may forget them.
    public func expired(at now: Date, tokenLifetime: TimeInterval) -> [SigningKey] {
        let kept = Set(published(at: now, tokenLifetime: tokenLifetime).map(\.id))
        return keys.filter { !kept.contains($0.id) }
    }
}
