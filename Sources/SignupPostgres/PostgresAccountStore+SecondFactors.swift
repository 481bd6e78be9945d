import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
    // MARK: Second factors

    public func startSecondFactorSetup(ofAccount id: Int64, sealedSecret: [UInt8], at date: Date) throws -> Bool {
        let sealed = Data(sealedSecret)
        return try run("start a second factor's setup") { client in
            // One statement: an insert, or a replacement of a setup not yet on; a factor that is
            // on stays as it is (the conflict's WHERE), and nothing is returned then.
            try await Self.first(Int64.self, client.query("""
                INSERT INTO second_factors (account_id, sealed_secret, enabled_at, last_step, created_at)
                VALUES (\(id), \(sealed), NULL, 0, \(date))
                ON CONFLICT (account_id) DO UPDATE SET sealed_secret = EXCLUDED.sealed_secret, last_step = 0,
                    created_at = EXCLUDED.created_at, failed_codes = 0
                WHERE second_factors.enabled_at IS NULL
                RETURNING account_id
                """)) != nil
        }
    }

    public func secondFactor(ofAccount id: Int64) throws -> SecondFactor? {
        try run("read a second factor") { client in
            for try await (account, sealed, enabled, step, created, failed, codes) in try await client.query("""
                SELECT account_id, sealed_secret, enabled_at, last_step, created_at, failed_codes,
                       (SELECT count(*) FROM second_factor_codes WHERE second_factor_codes.account_id = second_factors.account_id)
                FROM second_factors WHERE account_id = \(id)
                """).decode((Int64, Data, Date?, Int64, Date, Int32, Int64).self) {
                return SecondFactor(accountID: account, sealedSecret: Array(sealed), enabledAt: enabled, lastStep: step,
                                    recoveryCodesLeft: Int(codes), createdAt: created, failedCodes: Int(failed))
            }
            return nil
        }
    }

    public func enableSecondFactor(ofAccount id: Int64, step: Int64, recoveryCodeHashes: [String], at date: Date,
                                   events: [OutboxEvent]) throws -> Bool {
        let logger = self.logger
        return try run("switch a second factor on") { client in
            try await client.withTransaction(logger: logger) { connection -> Bool in
                guard try await Self.first(Int64.self, connection.query("""
                    UPDATE second_factors SET enabled_at = \(date), last_step = \(step)
                    WHERE account_id = \(id) AND enabled_at IS NULL RETURNING account_id
                    """, logger: logger)) != nil else { return false }
                for hash in recoveryCodeHashes {
                    try await connection.query("""
                        INSERT INTO second_factor_codes (account_id, code_hash) VALUES (\(id), \(hash)) ON CONFLICT DO NOTHING
                        """, logger: logger)
                }
                for event in events { try await Self.enqueue(event, connection, logger) }
                return true
            }
        }
    }

    public func spendSecondFactorStep(ofAccount id: Int64, step: Int64) throws -> Bool {
        try run("spend a second factor's code") { client in
            try await Self.first(Int64.self, client.query("""
                UPDATE second_factors SET last_step = \(step)
                WHERE account_id = \(id) AND enabled_at IS NOT NULL AND last_step < \(step) RETURNING account_id
                """)) != nil
        }
    }

    public func spendRecoveryCode(ofAccount id: Int64, hash: String) throws -> Bool {
        try run("spend a recovery code") { client in
            try await Self.first(Int64.self, client.query("""
                DELETE FROM second_factor_codes WHERE account_id = \(id) AND code_hash = \(hash) RETURNING account_id
                """)) != nil
        }
    }

    public func chargeSecondFactorCode(ofAccount id: Int64, lockout: SecondFactorLockout,
                                       notices: [Int: [OutboxEvent]]) throws -> Int? {
        let logger = self.logger, cap = lockout.wrongCodes
        return try run("count a second factor's code") { client in
            try await client.withTransaction(logger: logger) { connection -> Int? in
                guard let count = try await Self.first(Int32.self, connection.query("""
                    UPDATE second_factors SET failed_codes = failed_codes + 1
                    WHERE account_id = \(id) AND enabled_at IS NOT NULL AND failed_codes < \(cap) RETURNING failed_codes
                    """, logger: logger)) else { return nil }
                for event in notices[Int(count)] ?? [] { try await Self.enqueue(event, connection, logger) }
                return Int(count)
            }
        }
    }

    public func clearSecondFactorFailures(ofAccount id: Int64) throws {
        try run("clear a second factor's wrong codes") { client in
            _ = try await client.query("UPDATE second_factors SET failed_codes = 0 WHERE account_id = \(id) AND failed_codes > 0")
        }
    }

    public func replaceRecoveryCodes(ofAccount id: Int64, hashes: [String], events: [OutboxEvent]) throws -> Bool {
        let logger = self.logger
        return try run("replace recovery codes") { client in
            try await client.withTransaction(logger: logger) { connection -> Bool in
                // The factor's row locked: two replacements at once are one after the other.
                guard try await Self.first(Int64.self, connection.query("""
                    SELECT account_id FROM second_factors WHERE account_id = \(id) AND enabled_at IS NOT NULL FOR UPDATE
                    """, logger: logger)) != nil else { return false }
                try await connection.query("DELETE FROM second_factor_codes WHERE account_id = \(id)", logger: logger)
                for hash in hashes {
                    try await connection.query("""
                        INSERT INTO second_factor_codes (account_id, code_hash) VALUES (\(id), \(hash)) ON CONFLICT DO NOTHING
                        """, logger: logger)
                }
                for event in events { try await Self.enqueue(event, connection, logger) }
                return true
            }
        }
    }

    public func removeSecondFactor(ofAccount id: Int64, events: [OutboxEvent]) throws -> Bool {
        let logger = self.logger
        return try run("remove a second factor") { client in
            try await client.withTransaction(logger: logger) { connection -> Bool in
                guard try await Self.first(Int64.self, connection.query(
                    "DELETE FROM second_factors WHERE account_id = \(id) RETURNING account_id", logger: logger)) != nil
                else { return false }
                try await connection.query("DELETE FROM second_factor_codes WHERE account_id = \(id)", logger: logger)
                for event in events { try await Self.enqueue(event, connection, logger) }
                return true
            }
        }
    }
}
