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
    /// Codes typed since the last right one that were wrong (or not yet judged): at the
    /// policy's `SecondFactorLockout.wrongCodes` the app's codes are refused until a recovery
    /// code (or an operator's reset). No right password touches it.
    public let failedCodes: Int

    public init(accountID: Int64, sealedSecret: [UInt8], enabledAt: Date?, lastStep: Int64, recoveryCodesLeft: Int,
                createdAt: Date, failedCodes: Int = 0) {
        self.accountID = accountID
        self.sealedSecret = sealedSecret
        self.enabledAt = enabledAt
        self.lastStep = lastStep
        self.recoveryCodesLeft = recoveryCodesLeft
        self.createdAt = createdAt
        self.failedCodes = failedCodes
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

    /// Counts one code as wrong before it is judged (a limit is spent before the work it
    /// guards; a right code then clears the count), in one atomic update shared by every
    /// instance: the count after it, or nil, counting nothing, when `lockout.wrongCodes` were
    /// counted already (the app's codes are refused) or the account has no factor on. Reaching
    /// a count that `notices` names writes those events (the owner's warning, the lock's mail)
    /// in the same transaction: exactly once, however many guesses arrive together.
    func chargeSecondFactorCode(ofAccount id: Int64, lockout: SecondFactorLockout,
                                notices: [Int: [OutboxEvent]]) throws -> Int?

    /// A right code (the app's or a recovery code): the wrong ones before it are forgotten,
    /// and a factor locked by them takes the app's codes again.
    func clearSecondFactorFailures(ofAccount id: Int64) throws

    /// New recovery codes in place of every old one (used or not), with `events`. False
    /// when the account has no factor switched on.
    func replaceRecoveryCodes(ofAccount id: Int64, hashes: [String], events: [OutboxEvent]) throws -> Bool

    /// Removes the factor and its recovery codes, with `events`; false when there was none.
    func removeSecondFactor(ofAccount id: Int64, events: [OutboxEvent]) throws -> Bool
}

/// How many wrong second-factor codes in a row an account takes (`second_factor_wrong_codes`
/// in a policy file): at `wrongCodes` the app's codes are refused until a recovery code or an
/// operator's reset (NIST SP 800-63B-4 §5.2.2 allows at most 100 consecutive failures), and
/// the owner is mailed at `warnAt` and at the lock. Counted per account in the store, apart
/// from the password's failures: a right password never buys more guesses at the code.
public struct SecondFactorLockout: Sendable, Equatable {
    /// Wrong codes in a row that lock the app's codes.
    public var wrongCodes: Int
    /// The largest number a policy may set (NIST's ceiling).
    public static let maximum = 100

    public init(wrongCodes: Int = 10) {
        self.wrongCodes = wrongCodes
    }

    /// The owner's first warning: a wrong code after a right password means somebody else may
    /// know the password. Three in a row (a person mistyping rarely gets there), or never when
    /// the lock comes first.
    public var warnAt: Int? { wrongCodes > 3 ? 3 : nil }
}
