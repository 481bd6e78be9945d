import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
    // MARK: Address changes

    public func startEmailChange(_ change: EmailChange, mail: OutboxEvent?) throws {
        let logger = self.logger
        try run("start an address change") { client in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("""
                    INSERT INTO email_changes (account_id, new_email, code_hash, wrong_tries, expires_at, created_at)
                    VALUES (\(change.accountID), \(change.newEmail), \(change.codeHash), \(change.wrongTries),
                            \(change.expiresAt), \(change.createdAt))
                    ON CONFLICT (account_id) DO UPDATE SET new_email = EXCLUDED.new_email, code_hash = EXCLUDED.code_hash,
                        wrong_tries = EXCLUDED.wrong_tries, expires_at = EXCLUDED.expires_at, created_at = EXCLUDED.created_at
                    """, logger: logger)
                if let mail { try await Self.enqueue(mail, connection, logger) }
            }
        }
    }

    public func emailChange(ofAccount id: Int64, at now: Date) throws -> EmailChange? {
        try run("read an address change") { client in
            for try await (account, email, code, tries, expires, created) in try await client.query("""
                SELECT account_id, new_email, code_hash, wrong_tries, expires_at, created_at FROM email_changes
                WHERE account_id = \(id) AND expires_at > \(now)
                """).decode((Int64, String, String, Int, Date, Date).self) {
                return EmailChange(accountID: account, newEmail: email, codeHash: code, wrongTries: tries, expiresAt: expires,
                                   createdAt: created)
            }
            return nil
        }
    }

    public func spendEmailChangeTry(ofAccount id: Int64, maximum: Int, at now: Date) throws -> Int? {
        try run("count an address change's try") { client in
            try await Self.first(Int.self, client.query("""
                UPDATE email_changes SET wrong_tries = wrong_tries + 1
                WHERE account_id = \(id) AND wrong_tries < \(maximum) AND expires_at > \(now) RETURNING wrong_tries
                """))
        }
    }

    public func completeEmailChange(ofAccount id: Int64, at now: Date, undoLinkHash: String, undoUntil: Date,
                                    events: @Sendable (Account, String) -> [OutboxEvent]) throws -> EmailChangeCompletion {
        let logger = self.logger
        // The events are made before the transaction's task starts (a non-escaping closure
        // cannot travel into it): from the account as it will be, then checked.
        guard let change = try emailChange(ofAccount: id, at: now), let before = try account(id: id) else { return .none }
        let newEmail = change.newEmail, canonical = EmailAddress.canonical(newEmail)
        let written = events(Account(id: before.id, username: before.username, email: newEmail, passwordHash: before.passwordHash,
                                     createdAt: before.createdAt, profile: before.profile, emailVerifiedAt: now,
                                     disabledAt: before.disabledAt), before.email)
        return try run("complete an address change") { client in
            try await client.withTransaction(logger: logger) { connection -> EmailChangeCompletion in
                guard try await Self.first(String.self, connection.query("""
                    DELETE FROM email_changes WHERE account_id = \(id) AND expires_at > \(now) AND new_email = \(newEmail)
                    RETURNING new_email
                    """, logger: logger)) != nil else { return .none }
                guard try await Self.first(Bool.self, connection.query(
                    "SELECT EXISTS(SELECT 1 FROM users WHERE email_canonical = \(canonical) AND id <> \(id))",
                    logger: logger)) == false else { return .taken }
                guard let account = try await Self.accounts(connection.query("""
                    UPDATE users SET email = \(newEmail), email_canonical = \(canonical), email_verified_at = \(now)
                    WHERE id = \(id)
                    RETURNING id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at
                    """, logger: logger)).first else { return .none }
                try await connection.query("""
                    INSERT INTO email_undos (link_hash, account_id, old_email, old_verified_at, expires_at, changed_at, password_hash)
                    VALUES (\(undoLinkHash), \(id), \(before.email), \(before.emailVerifiedAt), \(undoUntil), \(now),
                        \(before.passwordHash))
                    """, logger: logger)
                // Recoveries mailed to the old address end with it (issue 52): its mailbox no
                // longer opens the account.
                try await connection.query("DELETE FROM account_recoveries WHERE account_id = \(id)", logger: logger)
                for event in written { try await Self.enqueue(event, connection, logger) }
                return .changed(account: account, previous: before.email)
            }
        }
    }

    public func undoEmailChange(linkHash: String, at now: Date, events: @Sendable (Account) -> [OutboxEvent]) throws -> EmailChangeUndo? {
        let logger = self.logger
        // Read first, for the events (see completeEmailChange); the transaction checks again.
        let found: (Int64, String, Date?)? = try run("read an address change's undo link") { client in
            for try await row in try await client.query("""
                SELECT account_id, old_email, old_verified_at FROM email_undos WHERE link_hash = \(linkHash) AND expires_at > \(now)
                """).decode((Int64, String, Date?).self) {
                return row
            }
            return nil
        }
        guard let (id, oldEmail, oldVerified) = found, let before = try account(id: id) else { return nil }
        let canonical = EmailAddress.canonical(oldEmail)
        let written = events(Account(id: before.id, username: before.username, email: oldEmail, passwordHash: before.passwordHash,
                                     createdAt: before.createdAt, profile: before.profile, emailVerifiedAt: oldVerified,
                                     disabledAt: before.disabledAt))
        return try run("undo an address change") { client in
            try await client.withTransaction(logger: logger) { connection -> EmailChangeUndo? in
                var spent: (Int64, Date?, String?)?
                for try await row in try await connection.query("""
                    DELETE FROM email_undos WHERE link_hash = \(linkHash) AND expires_at > \(now)
                    RETURNING account_id, changed_at, password_hash
                    """, logger: logger).decode((Int64, Date?, String?).self) {
                    spent = row
                }
                guard let (_, changedAt, passwordBefore) = spent else { return nil }
                guard try await Self.first(Bool.self, connection.query(
                    "SELECT EXISTS(SELECT 1 FROM users WHERE email_canonical = \(canonical) AND id <> \(id))",
                    logger: logger)) == false else { return .taken }
                let storedCanonical: String? = oldVerified == nil ? nil : canonical
                guard let account = try await Self.accounts(connection.query("""
                    UPDATE users SET email = \(oldEmail), email_canonical = \(storedCanonical), email_verified_at = \(oldVerified)
                    WHERE id = \(id)
                    RETURNING id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at
                    """, logger: logger)).first else { return nil }
                // Whoever changed it is signed out; nothing they started stays open.
                try await connection.query("DELETE FROM sign_in_sessions WHERE user_id = \(id)", logger: logger)
                try await connection.query("DELETE FROM account_recoveries WHERE account_id = \(id)", logger: logger)
                try await connection.query("DELETE FROM email_changes WHERE account_id = \(id)", logger: logger)
                try await connection.query("DELETE FROM email_undos WHERE account_id = \(id)", logger: logger)
                // Every way in added since the change goes (issue 52): whoever changed the address
                // may have added it to come back.
                var removed = UndoneWaysIn()
                var restored = account
                if let changedAt {
                    removed.passkeys = try await Self.count(connection.query(
                        "DELETE FROM passkeys WHERE user_id = \(id) AND created_at >= \(changedAt) RETURNING user_id", logger: logger))
                    removed.providers = try await Self.count(connection.query(
                        "DELETE FROM provider_links WHERE account_id = \(id) AND linked_at >= \(changedAt) RETURNING account_id",
                        logger: logger))
                    removed.secondFactor = try await Self.count(connection.query(
                        "DELETE FROM second_factors WHERE account_id = \(id) AND created_at >= \(changedAt) RETURNING account_id",
                        logger: logger)) > 0
                    if removed.secondFactor {
                        try await connection.query("DELETE FROM second_factor_codes WHERE account_id = \(id)", logger: logger)
                    }
                }
                if let passwordBefore, passwordBefore != account.passwordHash {
                    try await connection.query("UPDATE users SET password_hash = \(passwordBefore) WHERE id = \(id)", logger: logger)
                    removed.password = true
                    restored = Account(id: account.id, username: account.username, email: account.email, passwordHash: passwordBefore,
                                       createdAt: account.createdAt, profile: account.profile,
                                       emailVerifiedAt: account.emailVerifiedAt, disabledAt: account.disabledAt)
                }
                for event in written { try await Self.enqueue(event, connection, logger) }
                return .restored(restored, removed: removed)
            }
        }
    }

    public func removeExpiredEmailChanges(at now: Date) throws -> Int {
        try countRows("remove expired address changes", "DELETE FROM email_changes WHERE expires_at <= \(now) RETURNING account_id")
            + countRows("remove expired address changes", "DELETE FROM email_undos WHERE expires_at <= \(now) RETURNING account_id")
    }
}
