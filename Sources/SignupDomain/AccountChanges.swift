import Foundation

/// What an account's owner (on `/account`) and the operator (`signup-server accounts`) change
/// about an existing account. Each call is one transaction with the outbox events that
/// announce it (the owner's notice mail, the webhook), so a change never happens untold and
/// nothing is told that did not happen. The events are made by the caller from the account
/// it read, and written only when the change is.
public protocol AccountChanges: Sendable {
    /// Replaces the password hash, if it is still `expected` (a change or recovery that got
    /// there first wins; nil then, nothing written), and ends every signed-in session of the
    /// account but `keeping` (the id hash of the browser that changed it). Returns how many
    /// sessions ended.
    func changePassword(ofAccount id: Int64, from expected: String, to newHash: String, keeping idHash: String?,
                        events: [OutboxEvent]) throws -> Int?

    /// Gives one of the account's passkeys a name its owner recognises; false when the
    /// account has no passkey with this id (another account's id renames nothing).
    func renamePasskey(credentialID: [UInt8], ofAccount id: Int64, to name: String) throws -> Bool

    /// Removes one of the account's passkeys, unless it is the last way in (no password and
    /// no other passkey): checked in the same transaction, so two removals at once cannot
    /// both pass it.
    func removePasskey(credentialID: [UInt8], ofAccount id: Int64, events: [OutboxEvent]) throws -> WayInRemoval

    /// Deletes the account with everything that hangs on it (sessions, passkeys, recoveries)
    /// and keeps its username from new accounts until `until` (nobody takes over its identity
    /// at once). False when there was no such account.
    func deleteAccount(id: Int64, reservingUsernameUntil until: Date, events: [OutboxEvent]) throws -> Bool

    /// Disables the account (`disabledAt` set: sign-in refused, every session and recovery
    /// ended, data kept) or enables it again (nil). Returns the sessions that ended, or nil
    /// when there is no such account or it is already in that state.
    func setAccountDisabled(id: Int64, at date: Date?, events: [OutboxEvent]) throws -> Int?

    /// Forgets usernames whose reservation after a deletion is over; returns how many.
    func removeEndedUsernameReservations(at now: Date) throws -> Int
}

/// What removing one of an account's ways in did: a passkey (`AccountChanges.removePasskey`)
/// or a provider's link (`ProviderLinks.unlinkProvider`).
public enum WayInRemoval: Sendable, Equatable {
    case removed
    /// The account has no such passkey or link.
    case notFound
    /// It is the account's last way in: no password, and no other passkey or link.
    case lastWayIn
}

/// The longest passkey name kept, in characters (`Passkey.name`).
public enum PasskeyName {
    public static let maximumLength = 64

    /// The name as typed, trimmed, control characters dropped, cut to `maximumLength`; nil
    /// when nothing is left.
    public static func cleaned(_ text: String) -> String? {
        let kept = String(String.UnicodeScalarView(text.unicodeScalars.filter { !$0.properties.generalCategory.isControl }))
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return kept.isEmpty ? nil : String(kept.prefix(maximumLength))
    }
}

private extension Unicode.GeneralCategory {
    var isControl: Bool {
        switch self {
        case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned, .privateUse: return true
        default: return false
        }
    }
}
