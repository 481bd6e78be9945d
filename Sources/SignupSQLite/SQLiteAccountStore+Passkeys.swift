import Foundation
import SignupDomain
import GRDB

extension SQLiteAccountStore {
    // MARK: Passkeys

    public func userHandle(ofAccount id: Int64) throws -> [UInt8] {
        try write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT user_handle FROM users WHERE id = ?", arguments: [id]) else {
                throw PasskeyError.unknownAccount
            }
            if let stored: Data = row["user_handle"] { return Array(stored) }
            let handle = Data((0..<32).map { _ in UInt8.random(in: .min ... .max) })
            try db.execute(sql: "UPDATE users SET user_handle = ? WHERE id = ?", arguments: [handle, id])
            return Array(handle)
        }
    }

    public func account(withUserHandle handle: [UInt8]) throws -> Account? {
        try read { db in try Self.fetchAccounts(db, where: "user_handle = ?", [Data(handle)]).first }
    }

    public func addPasskey(_ passkey: Passkey, events: [OutboxEvent]) throws {
        try write { db in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM users WHERE id = ?)", arguments: [passkey.accountID]) == true else {
                throw PasskeyError.unknownAccount
            }
            do {
                try Self.insert(passkey, db)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                throw PasskeyError.credentialExists
            }
            for event in events { try Self.enqueue(event, db) }
        }
    }

    public func passkey(credentialID: [UInt8]) throws -> Passkey? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM passkeys WHERE credential_id = ?", arguments: [Data(credentialID)]).map(Self.passkey)
        }
    }

    public func passkeys(ofAccount id: Int64) throws -> [Passkey] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM passkeys WHERE user_id = ? ORDER BY created_at, credential_id",
                             arguments: [id]).map(Self.passkey)
        }
    }

    public func recordPasskeyUse(credentialID: [UInt8], signCount: UInt32, isBackedUp: Bool, at date: Date) throws -> Bool {
        try write { db in
            try db.execute(sql: """
                UPDATE passkeys SET sign_count = ?, backed_up = ?, last_used_at = ?
                WHERE credential_id = ? AND (sign_count < ? OR (sign_count = 0 AND ? = 0))
                """, arguments: [Int64(signCount), isBackedUp, date, Data(credentialID), Int64(signCount), Int64(signCount)])
            return db.changesCount == 1
        }
    }

    static func passkey(_ row: Row) -> Passkey {
        Passkey(credentialID: Array(row["credential_id"] as Data), accountID: row["user_id"],
                publicKey: Array(row["public_key"] as Data), algorithm: row["algorithm"],
                signCount: UInt32(clamping: row["sign_count"] as Int64), transports: Passkey.split(row["transports"]),
                isBackupEligible: row["backup_eligible"], isBackedUp: row["backed_up"], createdAt: row["created_at"],
                lastUsedAt: row["last_used_at"], name: row["name"])
    }

    public func renamePasskey(credentialID: [UInt8], ofAccount id: Int64, to name: String) throws -> Bool {
        try write { db in
            try db.execute(sql: "UPDATE passkeys SET name = ? WHERE credential_id = ? AND user_id = ?",
                           arguments: [name, Data(credentialID), id])
            return db.changesCount == 1
        }
    }

    public func removePasskey(credentialID: [UInt8], ofAccount id: Int64, events: [OutboxEvent]) throws -> WayInRemoval {
        try write { db -> WayInRemoval in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM passkeys WHERE credential_id = ? AND user_id = ?)",
                                    arguments: [Data(credentialID), id]) == true else { return .notFound }
            // The write transaction holds SQLite's one writer: no other removal runs between
            // this count and the delete.
            let others = try Int.fetchOne(db, sql: "SELECT count(*) FROM passkeys WHERE user_id = ? AND credential_id != ?",
                                          arguments: [id, Data(credentialID)]) ?? 0
            let hasPassword = try Bool.fetchOne(db, sql: "SELECT password_hash != ? FROM users WHERE id = ?",
                                                arguments: [Account.unusablePasswordHash, id]) ?? false
            let links = try Int.fetchOne(db, sql: "SELECT count(*) FROM provider_links WHERE account_id = ?", arguments: [id]) ?? 0
            guard others > 0 || hasPassword || links > 0 else { return .lastWayIn }
            try db.execute(sql: "DELETE FROM passkeys WHERE credential_id = ? AND user_id = ?", arguments: [Data(credentialID), id])
            for event in events { try Self.enqueue(event, db) }
            return .removed
        }
    }
}
