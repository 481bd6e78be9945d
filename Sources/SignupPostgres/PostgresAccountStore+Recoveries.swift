import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
    // MARK: Account recoveries

    public func startRecovery(_ recovery: AccountRecovery, mail: OutboxEvent?) throws {
        let logger = self.logger
        try run("start an account recovery") { client in
            try await client.withTransaction(logger: logger) { connection in
                // A new code voids the account's earlier ones; ended ones go on the way.
                try await connection.query("""
                    DELETE FROM account_recoveries
                    WHERE expires_at <= \(recovery.createdAt) OR token = \(recovery.token) OR account_id = \(recovery.accountID)
                    """, logger: logger)
                try await connection.query("""
                    INSERT INTO account_recoveries (token, account_id, code_hash, link_hash, wrong_tries, language, expires_at,
                        created_at)
                    VALUES (\(recovery.token), \(recovery.accountID), \(recovery.codeHash), \(recovery.linkHash),
                        \(recovery.wrongTries), \(recovery.language), \(recovery.expiresAt), \(recovery.createdAt))
                    """, logger: logger)
                if let mail { try await Self.enqueue(mail, connection, logger) }
            }
        }
    }

    public func recovery(token: String, at now: Date) throws -> AccountRecovery? {
        try run("read an account recovery") { client in
            try await Self.recovery(client.query("""
                SELECT \(unescaped: Self.recoveryColumns) FROM account_recoveries WHERE token = \(token) AND expires_at > \(now)
                """))
        }
    }

    public func recovery(linkHash: String, at now: Date) throws -> AccountRecovery? {
        try run("read an account recovery") { client in
            try await Self.recovery(client.query("""
                SELECT \(unescaped: Self.recoveryColumns) FROM account_recoveries
                WHERE link_hash = \(linkHash) AND expires_at > \(now)
                """))
        }
    }

    public func spendRecoveryTry(token: String, maximum: Int, at now: Date) throws -> Int? {
        try run("spend a recovery code try") { client in
            try await Self.first(Int.self, client.query("""
                UPDATE account_recoveries SET wrong_tries = wrong_tries + 1
                WHERE token = \(token) AND wrong_tries < \(maximum) AND expires_at > \(now) RETURNING wrong_tries
                """))
        }
    }

    public func exchangeRecoveryCode(token: String, linkHash: String, at now: Date) throws -> Bool {
        try run("open an account recovery") { client in
            try await Self.first(String.self, client.query("""
                UPDATE account_recoveries SET code_hash = '', link_hash = \(linkHash)
                WHERE token = \(token) AND expires_at > \(now) RETURNING token
                """)) != nil
        }
    }

    public func completeRecovery(linkHash: String, passwordHash: String, at now: Date,
                                 events: @Sendable (Account) -> [OutboxEvent]) throws -> CompletedRecovery? {
        let logger = self.logger
        // The events are made before the transaction's task starts (a non-escaping closure
        // cannot travel into it): from the account as the recovery names it, then checked.
        guard let pending = try recovery(linkHash: linkHash, at: now), let id = pending.accountID,
              let before = try account(id: id) else { return nil }
        let written = events(Account(id: before.id, username: before.username, email: before.email, passwordHash: passwordHash,
                                     createdAt: before.createdAt, profile: before.profile,
                                     emailVerifiedAt: before.emailVerifiedAt))
        return try run("store a recovered account's password") { client in
            try await client.withTransaction(logger: logger) { connection -> CompletedRecovery? in
                // Deleted first, in the same transaction: the link works once, whatever follows.
                guard try await Self.first(Int64.self, connection.query("""
                    DELETE FROM account_recoveries
                    WHERE link_hash = \(linkHash) AND expires_at > \(now) AND account_id = \(id) RETURNING account_id
                    """, logger: logger)) != nil else { return nil }
                guard let account = try await Self.accounts(connection.query("""
                    UPDATE users SET password_hash = \(passwordHash) WHERE id = \(id)
                    RETURNING id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at
                    """, logger: logger)).first else { return nil }
                var ended = 0
                for try await _ in try await connection.query(
                    "DELETE FROM sign_in_sessions WHERE user_id = \(id) RETURNING id_hash", logger: logger).decode(String.self) {
                    ended += 1
                }
                try await connection.query("DELETE FROM account_recoveries WHERE account_id = \(id)", logger: logger)
                for event in written { try await Self.enqueue(event, connection, logger) }
                return CompletedRecovery(account: account, endedSessions: ended)
            }
        }
    }

    public func removeExpiredRecoveries(at now: Date) throws -> Int {
        try countRows("remove expired account recoveries", "DELETE FROM account_recoveries WHERE expires_at <= \(now) RETURNING token")
    }

    static let recoveryColumns = "token, account_id, code_hash, link_hash, wrong_tries, language, expires_at, created_at"

    static func recovery(_ rows: PostgresRowSequence) async throws -> AccountRecovery? {
        for try await (token, account, codeHash, linkHash, tries, language, expires, created)
            in rows.decode((String, Int64?, String, String, Int, String, Date, Date).self) {
            return AccountRecovery(token: token, accountID: account, codeHash: codeHash, linkHash: linkHash, wrongTries: tries,
                                   language: language, expiresAt: expires, createdAt: created)
        }
        return nil
    }
}
