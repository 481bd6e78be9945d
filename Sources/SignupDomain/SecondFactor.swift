import Foundation

/// An account's second factor (issue 44): an authenticator app's TOTP secret, sealed by the
/// server before the store sees it (the store never holds it readable), and its single-use
/// recovery codes, stored hashed.
public struct SecondFactor: Sendable, Equatable {
    public let accountID: Int64
    /// The TOTP secret as the server sealed it.
    public let sealedSecret: [UInt8]
    /// When a first valid code switched it on; nil while it is being set up.
    public let enabledAt: Date?
    /// The latest 30-second step whose code was accepted: a code is accepted once, so no
    /// step at or before it is accepted again, on any instance.
    public let lastStep: Int64
    /// Recovery codes not yet used.
    public let recoveryCodesLeft: Int
    public let createdAt: Date

    public init(accountID: Int64, sealedSecret: [UInt8], enabledAt: Date?, lastStep: Int64, recoveryCodesLeft: Int,
                createdAt: Date) {
        self.accountID = accountID
        self.sealedSecret = sealedSecret
        self.enabledAt = enabledAt
        self.lastStep = lastStep
        self.recoveryCodesLeft = recoveryCodesLeft
        self.createdAt = createdAt
    }

    public var isEnabled: Bool { enabledAt != nil }
}

/// Second factors, shared by every instance using the store. Each change is one transaction
/// with the events that announce it.
public protocol SecondFactors: Sendable {
    /// Starts a setup (a new sealed secret, not yet on), replacing one not yet on. False,
    /// changing nothing, when the account has a factor switched on.
    func startSecondFactorSetup(ofAccount id: Int64, sealedSecret: [UInt8], at date: Date) throws -> Bool

    func secondFactor(ofAccount id: Int64) throws -> SecondFactor?

    /// Switches the setup on: its first accepted step, the recovery codes' hashes, `events`.
    /// False when there is no setup waiting (none, or switched on meanwhile).
    func enableSecondFactor(ofAccount id: Int64, step: Int64, recoveryCodeHashes: [String], at date: Date,
                            events: [OutboxEvent]) throws -> Bool

    /// Spends a step's code: true only for a step later than every one accepted before, so a
    /// code is accepted once across every instance (and an older one never after a newer).
    func spendSecondFactorStep(ofAccount id: Int64, step: Int64) throws -> Bool

    /// Spends one recovery code by its hash: true once.
    func spendRecoveryCode(ofAccount id: Int64, hash: String) throws -> Bool

    /// New recovery codes in place of every old one (used or not), with `events`. False
    /// when the account has no factor switched on.
    func replaceRecoveryCodes(ofAccount id: Int64, hashes: [String], events: [OutboxEvent]) throws -> Bool

    /// Removes the factor and its recovery codes, with `events`; false when there was none.
    func removeSecondFactor(ofAccount id: Int64, events: [OutboxEvent]) throws -> Bool
}
