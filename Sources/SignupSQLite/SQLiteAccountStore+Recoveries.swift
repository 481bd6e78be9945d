import Foundation
import SignupDomain
import GRDB

extension SQLiteAccountStore {
    // MARK: Account recoveries

    public func startRecovery(_ recovery: AccountRecovery, mail: OutboxEvent?) throws {
        try write { db in
            // A new code voids the account's earlier ones; ended ones go on the way.
            try db.execute(sql: "DELETE FROM account_recoveries WHERE expires_at <= ? OR token = ? OR account_id = ?",
                           arguments: [recovery.createdAt, recovery.token, recovery.accountID])
            try db.execute(sql: """
                INSERT INTO account_recoveries (token, account_id, code_hash, link_hash, wrong_tries, language, expires_at,
                    created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [recovery.token, recovery.accountID, recovery.codeHash, recovery.linkHash, recovery.wrongTries,
                                 recovery.language, recovery.expiresAt, recovery.createdAt])
            if let mail { try Self.enqueue(mail, db) }
        }
    }

    public func recovery(token: String, at now: Date) throws -> AccountRecovery? {
        try read { db in try Self.fetchRecovery(db, where: "token = ? AND expires_at > ?", [token, now]) }
    }

    public func recovery(linkHash: String, at now: Date) throws -> AccountRecovery? {
        try read { db in try Self.fetchRecovery(db, where: "link_hash = ? AND expires_at > ?", [linkHash, now]) }
    }

    public func spendRecoveryTry(token: String, maximum: Int, at now: Date) throws -> Int? {
        try write { db in
            try Int.fetchOne(db, sql: """
                UPDATE account_recoveries SET wrong_tries = wrong_tries + 1
                WHERE token = ? AND wrong_tries < ? AND expires_at > ? RETURNING wrong_tries
                """, arguments: [token, maximum, now])
        }
    }

    public func exchangeRecoveryCode(token: String, linkHash: String, at now: Date) throws -> Bool {
        try write { db in
            try db.execute(sql: """
                UPDATE account_recoveries SET code_hash = '', link_hash = ? WHERE token = ? AND expires_at > ?
                """, arguments: [linkHash, token, now])
            return db.changesCount == 1
        }
    }

    public func completeRecovery(linkHash: String, passwordHash: String, at now: Date,
                                 events: @Sendable (Account) -> [OutboxEvent]) throws -> CompletedRecovery? {
        try write { db -> CompletedRecovery? in
            // Deleted first, in the same transaction: the link works once, whatever follows.
            guard let id = try Int64.fetchOne(db, sql: """
                DELETE FROM account_recoveries WHERE link_hash = ? AND expires_at > ? AND account_id IS NOT NULL
                RETURNING account_id
                """, arguments: [linkHash, now]) else { return nil }
            try db.execute(sql: "UPDATE users SET password_hash = ? WHERE id = ?", arguments: [passwordHash, id])
            try db.execute(sql: "DELETE FROM sign_in_sessions WHERE user_id = ?", arguments: [id])
            let ended = db.changesCount
            // Any other way in that was still open goes too: the password it would replace is new.
            try db.execute(sql: "DELETE FROM account_recoveries WHERE account_id = ?", arguments: [id])
            guard let account = try Self.fetchAccounts(db, where: "id = ?", [id]).first else { return nil }
            for event in events(account) { try Self.enqueue(event, db) }
            return CompletedRecovery(account: account, endedSessions: ended)
        }
    }

    public func removeExpiredRecoveries(at now: Date) throws -> Int {
        try removeRows("DELETE FROM account_recoveries WHERE expires_at <= ?", [now])
    }

    static func fetchRecovery(_ db: Database, where condition: String,
                              _ arguments: StatementArguments) throws -> AccountRecovery? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM account_recoveries WHERE \(condition)", arguments: arguments) else {
            return nil
        }
        return AccountRecovery(token: row["token"], accountID: row["account_id"], codeHash: row["code_hash"],
                               linkHash: row["link_hash"], wrongTries: row["wrong_tries"], language: row["language"],
                               expiresAt: row["expires_at"], createdAt: row["created_at"])
    }
}
