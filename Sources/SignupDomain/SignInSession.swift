import Crypto
import Foundation

/// A signed-in session as the account store keeps it. The cookie carries a random id; the
/// store holds only its SHA-256 (`SignInSessionID.hash`), so a copy of the database signs
/// nobody in.
public struct NewSignInSession: Sendable, Equatable {
    public let idHash: String
    public let accountID: Int64
    public let createdAt: Date
    /// When it ends however much it is used (the lifetime).
    public let expiresAt: Date
    /// The browser, coarsely ("Firefox · Linux"), for the owner's list of devices.
    public let device: String
    /// The network it came from (an IPv4 /24, an IPv6 /48), never the whole address.
    public let network: String
    /// The handle the owner's pages name it by (random; the id's hash never leaves the store).
    public let publicID: String
    /// When its owner proved who they are in it: when it began, for a password or a passkey
    /// that verified the person; never, for a passkey that only showed it was there (then the
    /// account page asks for the password before a sensitive change).
    public let authenticatedAt: Date
    /// How the person proved who they are (RFC 8176 values: `pwd`, `otp`, `hwk`, `fed`,
    /// `mfa`, …), for the ID tokens of applications signed in through it.
    public let methods: [String]

    public init(idHash: String, accountID: Int64, createdAt: Date, expiresAt: Date, device: String = "",
                network: String = "", publicID: String = SignInSessionID.makePublicID(), authenticatedAt: Date? = nil,
                methods: [String] = []) {
        self.authenticatedAt = authenticatedAt ?? createdAt
        self.methods = methods
        self.idHash = idHash
        self.accountID = accountID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.device = device
        self.network = network
        self.publicID = publicID
    }
}

/// One live signed-in session of an account, as its owner sees it ("your devices").
public struct SignInSessionSummary: Sendable, Equatable {
    /// Its handle (`NewSignInSession.publicID`).
    public let publicID: String
    /// The SHA-256 of its cookie's id: for telling "this browser" apart, never shown.
    public let idHash: String
    public let createdAt: Date
    public let lastSeenAt: Date
    /// When its owner last proved who they are in it (a password or a passkey): what a
    /// sensitive change asks to be recent.
    public let authenticatedAt: Date
    public let expiresAt: Date
    public let device: String
    public let network: String
    /// How it was proved (`NewSignInSession.methods`); empty for a session older than that record.
    public let methods: [String]

    public init(publicID: String, idHash: String, createdAt: Date, lastSeenAt: Date, authenticatedAt: Date,
                expiresAt: Date, device: String, network: String, methods: [String] = []) {
        self.methods = methods
        self.publicID = publicID
        self.idHash = idHash
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.authenticatedAt = authenticatedAt
        self.expiresAt = expiresAt
        self.device = device
        self.network = network
    }
}

/// The rules a signed-in session lives by, shared by every engine: when it ends, and how
/// often its last use is written (not on every request: `/auth` may be asked on every
/// request of the product behind the proxy).
public struct SignInSessionRules: Sendable, Equatable {
    /// Unused this long, a session ends before its lifetime.
    public var idleTimeout: TimeInterval
    /// A use is written only when the last written one is older than this.
    public var touchInterval: TimeInterval

    public init(idleTimeout: TimeInterval, touchInterval: TimeInterval = 60) {
        self.idleTimeout = idleTimeout
        self.touchInterval = touchInterval
    }
}

public enum SignInSessionID {
    /// A new random id for a cookie: 256 bits, URL-safe.
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A session's public handle: 16 random hex digits.
    public static func makePublicID() -> String {
        var generator = SystemRandomNumberGenerator()
        return Hex.encode((0..<8).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// What the store keeps of an id: its SHA-256 in lower-case hex.
    public static func hash(_ id: String) -> String {
        Hex.encode(SHA256.hash(data: Data(id.utf8)))
    }
}

/// A token bucket's rate for the store's shared buckets (`AccountStore.spendSharedTokens`):
/// refills `perSecond` up to `burst`.
public struct SharedBucketRate: Sendable, Equatable {
    public var perSecond: Double
    public var burst: Double

    public init(perSecond: Double, burst: Double) {
        self.perSecond = perSecond
        self.burst = burst
    }

    /// The tokens of a bucket that held `tokens` at `updated`, refilled until `now`.
    public func refilled(_ tokens: Double, updated: Date, now: Date) -> Double {
        min(burst, tokens + max(0, now.timeIntervalSince(updated)) * perSecond)
    }

    /// When a bucket holding `tokens` at `now` is full again (and its row can go).
    public func fullAt(_ tokens: Double, now: Date) -> Date {
        now.addingTimeInterval(perSecond > 0 ? max(0, burst - tokens) / perSecond : 0)
    }
}
