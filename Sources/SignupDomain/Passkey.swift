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
    /// What its owner calls it on `/account` ("" until named: the page then shows the browser
    /// it was made in, or a number). At most `PasskeyName.maximumLength` characters.
    public let name: String

    public init(credentialID: [UInt8], accountID: Int64, publicKey: [UInt8], algorithm: Int, signCount: UInt32,
                transports: [String], isBackupEligible: Bool, isBackedUp: Bool, createdAt: Date, lastUsedAt: Date? = nil,
                name: String = "") {
        self.name = name
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

extension PasskeyStore {
    /// Stores the passkey, announcing nothing.
    public func addPasskey(_ passkey: Passkey) throws {
        try addPasskey(passkey, events: [])
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

    /// Stores the passkey with the outbox events that announce it (its owner's notice), in
    /// one transaction.
    /// - Throws: `PasskeyError.credentialExists`, `.unknownAccount`.
    func addPasskey(_ passkey: Passkey, events: [OutboxEvent]) throws

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

/// A passkey made before its account exists (during sign-up): stored with the account, in
/// the same transaction, so an account made with a passkey always has it. A pending sign-up
/// (waiting for its address to be proved) keeps it until then.
public struct NewPasskey: Sendable, Equatable {
    public let credentialID: [UInt8]
    public let publicKey: [UInt8]
    public let algorithm: Int
    public let signCount: UInt32
    public let transports: [String]
    public let isBackupEligible: Bool
    public let isBackedUp: Bool
    /// The WebAuthn user handle the credential was made for: it becomes the account's.
    public let userHandle: [UInt8]
    public let createdAt: Date

    public init(credentialID: [UInt8], publicKey: [UInt8], algorithm: Int, signCount: UInt32, transports: [String],
                isBackupEligible: Bool, isBackedUp: Bool, userHandle: [UInt8], createdAt: Date) {
        self.credentialID = credentialID
        self.publicKey = publicKey
        self.algorithm = algorithm
        self.signCount = signCount
        self.transports = transports
        self.isBackupEligible = isBackupEligible
        self.isBackedUp = isBackedUp
        self.userHandle = userHandle
        self.createdAt = createdAt
    }

    /// The stored passkey, once its account has an id.
    public func passkey(accountID: Int64) -> Passkey {
        Passkey(credentialID: credentialID, accountID: accountID, publicKey: publicKey, algorithm: algorithm,
                signCount: signCount, transports: transports, isBackupEligible: isBackupEligible, isBackedUp: isBackedUp,
                createdAt: createdAt)
    }
}

extension NewPasskey: Codable {
    private enum CodingKeys: String, CodingKey {
        case credentialID = "credential_id", publicKey = "public_key", algorithm, signCount = "sign_count", transports
        case isBackupEligible = "backup_eligible", isBackedUp = "backed_up", userHandle = "user_handle"
        case createdAt = "created_at"
    }

    // Bytes as base64 (Data's coding), the time as seconds since 1970: a pending sign-up keeps it as one JSON text.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        credentialID = Array(try container.decode(Data.self, forKey: .credentialID))
        publicKey = Array(try container.decode(Data.self, forKey: .publicKey))
        algorithm = try container.decode(Int.self, forKey: .algorithm)
        signCount = try container.decode(UInt32.self, forKey: .signCount)
        transports = try container.decode([String].self, forKey: .transports)
        isBackupEligible = try container.decode(Bool.self, forKey: .isBackupEligible)
        isBackedUp = try container.decode(Bool.self, forKey: .isBackedUp)
        userHandle = Array(try container.decode(Data.self, forKey: .userHandle))
        createdAt = Date(timeIntervalSince1970: try container.decode(Double.self, forKey: .createdAt))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Data(credentialID), forKey: .credentialID)
        try container.encode(Data(publicKey), forKey: .publicKey)
        try container.encode(algorithm, forKey: .algorithm)
        try container.encode(signCount, forKey: .signCount)
        try container.encode(transports, forKey: .transports)
        try container.encode(isBackupEligible, forKey: .isBackupEligible)
        try container.encode(isBackedUp, forKey: .isBackedUp)
        try container.encode(Data(userHandle), forKey: .userHandle)
        try container.encode(createdAt.timeIntervalSince1970, forKey: .createdAt)
    }

    /// As a pending sign-up stores it: "" for none.
    public static func json(_ passkey: NewPasskey?) -> String {
        guard let passkey, let data = try? JSONEncoder().encode(passkey) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Read back from `json`; nil for "" (a malformed text is a storage fault, said as one).
    public static func fromJSON(_ text: String) throws -> NewPasskey? {
        guard !text.isEmpty else { return nil }
        do {
            return try JSONDecoder().decode(NewPasskey.self, from: Data(text.utf8))
        } catch {
            throw StorageFault("A pending sign-up's passkey could not be read: \(error)")
        }
    }
}
