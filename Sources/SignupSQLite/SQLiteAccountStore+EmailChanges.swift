import Foundation
import SignupDomain
import GRDB

extension SQLiteAccountStore {
    // MARK: Address changes

    public func startEmailChange(_ change: EmailChange, mail: OutboxEvent?) throws {
        try write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO email_changes (account_id, new_email, code_hash, wrong_tries, expires_at, created_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [change.accountID, change.newEmail, change.codeHash, change.wrongTries, change.expiresAt,
                                 change.createdAt])
            if let mail { try Self.enqueue(mail, db) }
        }
    }

    public func emailChange(ofAccount id: Int64, at now: Date) throws -> EmailChange? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM email_changes WHERE account_id = ? AND expires_at > ?", arguments: [id, now])
                .map { row in
                    EmailChange(accountID: row["account_id"], newEmail: row["new_email"], codeHash: row["code_hash"],
                                wrongTries: row["wrong_tries"], expiresAt: row["expires_at"], createdAt: row["created_at"])
                }
        }
    }

    public func spendEmailChangeTry(ofAccount id: Int64, maximum: Int, at now: Date) throws -> Int? {
        try write { db in
            try Int.fetchOne(db, sql: """
                UPDATE email_changes SET wrong_tries = wrong_tries + 1
                WHERE account_id = ? AND wrong_tries < ? AND expires_at > ? RETURNING wrong_tries
                """, arguments: [id, maximum, now])
        }
    }

    public func completeEmailChange(ofAccount id: Int64, at now: Date, undoLinkHash: String, undoUntil: Date,
                                    events: @Sendable (Account, String) -> [OutboxEvent]) throws -> EmailChangeCompletion {
        try write { db -> EmailChangeCompletion in
            // Spent first, in the same transaction: the code works once, whatever follows.
            guard let newEmail = try String.fetchOne(db, sql: """
                DELETE FROM email_changes WHERE account_id = ? AND expires_at > ? RETURNING new_email
                """, arguments: [id, now]),
                  let before = try Self.fetchAccounts(db, where: "id = ?", [id]).first else { return .none }
            let canonical = EmailAddress.canonical(newEmail)
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM users WHERE email_canonical = ? AND id != ?)",
                                    arguments: [canonical, id]) == false else { return .taken }
            try db.execute(sql: "UPDATE users SET email = ?, email_canonical = ?, email_verified_at = ? WHERE id = ?",
                           arguments: [newEmail, canonical, now, id])
            try db.execute(sql: """
                INSERT INTO email_undos (link_hash, account_id, old_email, old_verified_at, expires_at, changed_at, password_hash)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [undoLinkHash, id, before.email, before.emailVerifiedAt, undoUntil, now, before.passwordHash])
            // Recoveries mailed to the old address end with it (issue 52): its mailbox no
            // longer opens the account.
            try db.execute(sql: "DELETE FROM account_recoveries WHERE account_id = ?", arguments: [id])
            guard let account = try Self.fetchAccounts(db, where: "id = ?", [id]).first else { return .none }
            for event in events(account, before.email) { try Self.enqueue(event, db) }
            return .changed(account: account, previous: before.email)
        }
    }

    public func undoEmailChange(linkHash: String, at now: Date, events: @Sendable (Account) -> [OutboxEvent]) throws -> EmailChangeUndo? {
        try write { db -> EmailChangeUndo? in
            guard let row = try Row.fetchOne(db, sql: """
                DELETE FROM email_undos WHERE link_hash = ? AND expires_at > ?
                RETURNING account_id, old_email, old_verified_at, changed_at, password_hash
                """, arguments: [linkHash, now]) else { return nil }
            let id: Int64 = row["account_id"], oldEmail: String = row["old_email"], oldVerified: Date? = row["old_verified_at"]
            let changedAt: Date? = row["changed_at"], passwordBefore: String? = row["password_hash"]
            let canonical = EmailAddress.canonical(oldEmail)
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM users WHERE email_canonical = ? AND id != ?)",
                                    arguments: [canonical, id]) == false else { return .taken }
            try db.execute(sql: "UPDATE users SET email = ?, email_canonical = ?, email_verified_at = ? WHERE id = ?",
                           arguments: [oldEmail, oldVerified == nil ? nil : canonical, oldVerified, id])
            // Whoever changed it is signed out; nothing they started stays open.
            try db.execute(sql: "DELETE FROM sign_in_sessions WHERE user_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM account_recoveries WHERE account_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM email_changes WHERE account_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM email_undos WHERE account_id = ?", arguments: [id])
            // Every way in added since the change goes (issue 52): whoever changed the address
            // may have added it to come back.
            var removed = UndoneWaysIn()
            if let changedAt {
                try db.execute(sql: "DELETE FROM passkeys WHERE user_id = ? AND created_at >= ?", arguments: [id, changedAt])
                removed.passkeys = db.changesCount
                try db.execute(sql: "DELETE FROM provider_links WHERE account_id = ? AND linked_at >= ?", arguments: [id, changedAt])
                removed.providers = db.changesCount
                try db.execute(sql: "DELETE FROM second_factors WHERE account_id = ? AND created_at >= ?", arguments: [id, changedAt])
                if db.changesCount > 0 {
                    removed.secondFactor = true
                    try db.execute(sql: "DELETE FROM second_factor_codes WHERE account_id = ?", arguments: [id])
                }
            }
            if let passwordBefore {
                try db.execute(sql: "UPDATE users SET password_hash = ? WHERE id = ? AND password_hash != ?",
                               arguments: [passwordBefore, id, passwordBefore])
                removed.password = db.changesCount > 0
            }
            guard let account = try Self.fetchAccounts(db, where: "id = ?", [id]).first else { return nil }
            for event in events(account) { try Self.enqueue(event, db) }
            return .restored(account, removed: removed)
        }
    }

    public func removeExpiredEmailChanges(at now: Date) throws -> Int {
        try write { db in
            try db.execute(sql: "DELETE FROM email_changes WHERE expires_at <= ?", arguments: [now])
            let changes = db.changesCount
            try db.execute(sql: "DELETE FROM email_undos WHERE expires_at <= ?", arguments: [now])
            return changes + db.changesCount
        }
    }
}
