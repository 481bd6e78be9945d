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

    public init(idHash: String, accountID: Int64, createdAt: Date, expiresAt: Date) {
        self.idHash = idHash
        self.accountID = accountID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
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
