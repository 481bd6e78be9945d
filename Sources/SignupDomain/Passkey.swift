import Foundation

/// A passkey (a WebAuthn credential) that signs its account in, as the store keeps it.
public struct Passkey: Sendable, Equatable {
    public let credentialID: [UInt8]
    public let accountID: Int64
    /// The credential's COSE public key, as its authenticator sent it.
    public let publicKey: [UInt8]
    /// The COSE algorithm number (-7 ES256, -8 EdDSA, -257 RS256).
    public let algorithm: Int
    public let signCount: UInt32
    /// How the browser can reach it ("internal", "hybrid", "usb", …).
    public let transports: [String]
    public let isBackupEligible: Bool
    public let isBackedUp: Bool
    public let createdAt: Date
    public let lastUsedAt: Date?

    public init(credentialID: [UInt8], accountID: Int64, publicKey: [UInt8], algorithm: Int, signCount: UInt32,
                transports: [String], isBackupEligible: Bool, isBackedUp: Bool, createdAt: Date, lastUsedAt: Date? = nil) {
        self.credentialID = credentialID
        self.accountID = accountID
        self.publicKey = publicKey
        self.algorithm = algorithm
        self.signCount = signCount
        self.transports = transports
        self.isBackupEligible = isBackupEligible
        self.isBackedUp = isBackedUp
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}

public enum PasskeyError: Error, Equatable, Sendable {
    /// A credential with this id is stored already (on any account).
    case credentialExists
    /// No account has this id.
    case unknownAccount
}

/// Passkeys with their accounts, shared by every instance using the store.
public protocol PasskeyStore: Sendable {
    /// The account's WebAuthn user handle: 32 random bytes made the first time it is asked for
    /// (never its id or name, which would tell the authenticator who the person is here).
    /// - Throws: `PasskeyError.unknownAccount`.
    func userHandle(ofAccount id: Int64) throws -> [UInt8]

    /// The account a user handle belongs to.
    func account(withUserHandle handle: [UInt8]) throws -> Account?

    /// - Throws: `PasskeyError.credentialExists`, `.unknownAccount`.
    func addPasskey(_ passkey: Passkey) throws

    func passkey(credentialID: [UInt8]) throws -> Passkey?

    func passkeys(ofAccount id: Int64) throws -> [Passkey]

    /// A sign-in with the passkey: its counter, backup state and time. Only a counter that grew
    /// is written (or one an authenticator keeps at 0); false when another sign-in got there
    /// first with a counter as high, so this one is refused as a possible clone.
    func recordPasskeyUse(credentialID: [UInt8], signCount: UInt32, isBackedUp: Bool, at date: Date) throws -> Bool
}

extension Passkey {
    /// Transports as stored: one comma-separated text.
    public static func joined(_ transports: [String]) -> String { transports.joined(separator: ",") }
    public static func split(_ transports: String) -> [String] { transports.split(separator: ",").map(String.init) }
}
