import Foundation
import SignupDomain
import GRDB

extension SQLiteAccountStore {
    // MARK: Second factors

    public func startSecondFactorSetup(ofAccount id: Int64, sealedSecret: [UInt8], at date: Date) throws -> Bool {
        try write { db -> Bool in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM second_factors WHERE account_id = ? AND enabled_at IS NOT NULL)",
                                    arguments: [id]) == false else { return false }
            try db.execute(sql: """
                INSERT OR REPLACE INTO second_factors (account_id, sealed_secret, enabled_at, last_step, created_at)
                VALUES (?, ?, NULL, 0, ?)
                """, arguments: [id, Data(sealedSecret), date])
            return true
        }
    }

    public func secondFactor(ofAccount id: Int64) throws -> SecondFactor? {
        try read { db in
            try Row.fetchOne(db, sql: """
                SELECT account_id, sealed_secret, enabled_at, last_step, created_at, failed_codes,
                       (SELECT count(*) FROM second_factor_codes WHERE account_id = second_factors.account_id) AS codes
                FROM second_factors WHERE account_id = ?
                """, arguments: [id]).map { row in
                SecondFactor(accountID: row["account_id"], sealedSecret: Array(row["sealed_secret"] as Data), enabledAt: row["enabled_at"],
                             lastStep: row["last_step"], recoveryCodesLeft: row["codes"], createdAt: row["created_at"],
                             failedCodes: row["failed_codes"])
            }
        }
    }

    public func enableSecondFactor(ofAccount id: Int64, step: Int64, recoveryCodeHashes: [String], at date: Date,
                                   events: [OutboxEvent]) throws -> Bool {
        try write { db -> Bool in
            try db.execute(sql: "UPDATE second_factors SET enabled_at = ?, last_step = ? WHERE account_id = ? AND enabled_at IS NULL",
                           arguments: [date, step, id])
            guard db.changesCount == 1 else { return false }
            try Self.insertRecoveryCodes(recoveryCodeHashes, ofAccount: id, db)
            for event in events { try Self.enqueue(event, db) }
            return true
        }
    }

    public func spendSecondFactorStep(ofAccount id: Int64, step: Int64) throws -> Bool {
        try write { db -> Bool in
            try db.execute(sql: """
                UPDATE second_factors SET last_step = ? WHERE account_id = ? AND enabled_at IS NOT NULL AND last_step < ?
                """, arguments: [step, id, step])
            return db.changesCount == 1
        }
    }

    public func spendRecoveryCode(ofAccount id: Int64, hash: String) throws -> Bool {
        try write { db -> Bool in
            try db.execute(sql: "DELETE FROM second_factor_codes WHERE account_id = ? AND code_hash = ?", arguments: [id, hash])
            return db.changesCount == 1
        }
    }

    public func chargeSecondFactorCode(ofAccount id: Int64, lockout: SecondFactorLockout,
                                       notices: [Int: [OutboxEvent]]) throws -> Int? {
        try write { db -> Int? in
            guard let count = try Int.fetchOne(db, sql: """
                UPDATE second_factors SET failed_codes = failed_codes + 1
                WHERE account_id = ? AND enabled_at IS NOT NULL AND failed_codes < ?
                RETURNING failed_codes
                """, arguments: [id, lockout.wrongCodes]) else { return nil }
            for event in notices[count] ?? [] { try Self.enqueue(event, db) }
            return count
        }
    }

    public func clearSecondFactorFailures(ofAccount id: Int64) throws {
        try write { db in
            try db.execute(sql: "UPDATE second_factors SET failed_codes = 0 WHERE account_id = ? AND failed_codes > 0", arguments: [id])
        }
    }

    public func replaceRecoveryCodes(ofAccount id: Int64, hashes: [String], events: [OutboxEvent]) throws -> Bool {
        try write { db -> Bool in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM second_factors WHERE account_id = ? AND enabled_at IS NOT NULL)",
                                    arguments: [id]) == true else { return false }
            try db.execute(sql: "DELETE FROM second_factor_codes WHERE account_id = ?", arguments: [id])
            try Self.insertRecoveryCodes(hashes, ofAccount: id, db)
            for event in events { try Self.enqueue(event, db) }
            return true
        }
    }

    public func removeSecondFactor(ofAccount id: Int64, events: [OutboxEvent]) throws -> Bool {
        try write { db -> Bool in
            try db.execute(sql: "DELETE FROM second_factors WHERE account_id = ?", arguments: [id])
            guard db.changesCount == 1 else { return false }
            try db.execute(sql: "DELETE FROM second_factor_codes WHERE account_id = ?", arguments: [id])
            for event in events { try Self.enqueue(event, db) }
            return true
        }
    }

    static func insertRecoveryCodes(_ hashes: [String], ofAccount id: Int64, _ db: Database) throws {
        for hash in hashes {
            try db.execute(sql: "INSERT OR IGNORE INTO second_factor_codes (account_id, code_hash) VALUES (?, ?)", arguments: [id, hash])
        }
    }
}
