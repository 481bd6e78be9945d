import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
    // MARK: Pending sign-ups

    public func startPendingSignup(_ pending: PendingSignup, mail: OutboxEvent, at now: Date) throws {
        let canonical = Username.canonical(pending.username)
        let logger = self.logger
        try creating("start a pending sign-up") { client in
            try await client.withTransaction(logger: logger) { connection in
                // A hold that has ended releases its name before anyone asks for it again.
                try await connection.query("""
                    DELETE FROM pending_signups WHERE expires_at <= \(now) OR form_token = \(pending.formToken)
                    """, logger: logger)
                if try await Self.first(Bool.self, connection.query(
                    "SELECT EXISTS(SELECT 1 FROM users WHERE form_token = \(pending.formToken))", logger: logger)) == true {
                    throw AccountCreationError.formAlreadyUsed
                }
                if try await Self.first(Bool.self, connection.query(
                    "SELECT EXISTS(SELECT 1 FROM users WHERE username_canonical = \(canonical))", logger: logger)) == true {
                    throw AccountCreationError.usernameTaken
                }
                // Another form's live hold on the name: the unique index refuses the row.
                try await connection.query("""
                    INSERT INTO pending_signups (form_token, username, username_canonical, email, password_hash, profile,
                        language, return_to, code_hash, link_hash, wrong_tries, codes_sent, last_sent_at, expires_at, created_at,
                        passkey, javascript)
                    VALUES (\(pending.formToken), \(pending.username), \(canonical), \(pending.email), \(pending.passwordHash),
                        \(ProfileValue.json(pending.profile))::jsonb, \(pending.language), \(pending.returnTo), \(pending.codeHash),
                        \(pending.linkHash), \(pending.wrongTries), \(pending.codesSent), \(pending.lastSentAt),
                        \(pending.expiresAt), \(pending.createdAt), \(NewPasskey.json(pending.passkey)), \(pending.ranJavaScript))
                    """, logger: logger)
                try await Self.enqueue(mail, connection, logger)
            }
        }
    }

    public func pendingSignup(formToken: String, at now: Date) throws -> PendingSignup? {
        try run("read a pending sign-up") { client in
            try await Self.pending(client.query("""
                SELECT \(unescaped: Self.pendingColumns) FROM pending_signups WHERE form_token = \(formToken) AND expires_at > \(now)
                """))
        }
    }

    public func pendingSignup(linkHash: String, at now: Date) throws -> PendingSignup? {
        try run("read a pending sign-up") { client in
            try await Self.pending(client.query("""
                SELECT \(unescaped: Self.pendingColumns) FROM pending_signups WHERE link_hash = \(linkHash) AND expires_at > \(now)
                """))
        }
    }

    public func spendCodeTry(formToken: String, maximum: Int) throws -> Int? {
        try run("spend a code try") { client in
            try await Self.first(Int.self, client.query("""
                UPDATE pending_signups SET wrong_tries = wrong_tries + 1
                WHERE form_token = \(formToken) AND wrong_tries < \(maximum) RETURNING wrong_tries
                """))
        }
    }

    public func replaceCode(formToken: String, codeHash: String, linkHash: String, sentAt: Date, expiresAt: Date,
                            mail: OutboxEvent) throws -> Bool {
        let logger = self.logger
        return try run("send a new code") { client in
            try await client.withTransaction(logger: logger) { connection in
                let updated = try await Self.first(String.self, connection.query("""
                    UPDATE pending_signups SET code_hash = \(codeHash), link_hash = \(linkHash), wrong_tries = 0,
                        codes_sent = codes_sent + 1, last_sent_at = \(sentAt), expires_at = \(expiresAt)
                    WHERE form_token = \(formToken) AND expires_at > \(sentAt) RETURNING form_token
                    """, logger: logger))
                guard updated != nil else { return false }
                try await Self.enqueue(mail, connection, logger)
                return true
            }
        }
    }

    public func completePendingSignup(formToken: String, at now: Date, announce: Bool) throws -> Account? {
        let logger = self.logger
        do {
            return try creating("store a proved sign-up's account") { client in
                try await client.withTransaction(logger: logger) { connection -> Account? in
                    // Deleted first, in the same transaction: the proof works once, whatever follows.
                    guard let pending = try await Self.pending(connection.query("""
                        DELETE FROM pending_signups WHERE form_token = \(formToken) AND expires_at > \(now)
                        RETURNING \(unescaped: Self.pendingColumns)
                        """, logger: logger)) else { return nil }
                    let rows = try await connection.query("""
                        INSERT INTO users (username, username_canonical, email, email_canonical, email_verified_at,
                            password_hash, form_token, profile, created_at)
                        VALUES (\(pending.username), \(Username.canonical(pending.username)), \(pending.email),
                            \(EmailAddress.canonical(pending.email)), \(now), \(pending.passwordHash), \(formToken),
                            \(ProfileValue.json(pending.profile))::jsonb, \(now))
                        RETURNING id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at
                        """, logger: logger)
                    guard let stored = try await Self.accounts(rows).first else {
                        throw StorageFault("PostgreSQL stored the account but returned no row.")
                    }
                    if let passkey = pending.passkey { try await Self.insert(passkey, forAccount: stored.id, connection, logger) }
                    if announce { try await Self.enqueue(OutboxEvent.accountCreated(stored), connection, logger) }
                    return stored
                }
            }
        } catch let refusal where refusal is AccountCreationError || refusal is PasskeyError {
            // The transaction rolled back; the pending sign-up can never complete now, so it goes.
            try cancelPendingSignup(formToken: formToken)
            throw refusal
        }
    }

    public func cancelPendingSignup(formToken: String) throws {
        try run("cancel a pending sign-up") { client in
            try await client.query("DELETE FROM pending_signups WHERE form_token = \(formToken)")
        }
    }

    public func removeExpiredPendingSignups(at now: Date) throws -> Int {
        try countRows("remove expired pending sign-ups", "DELETE FROM pending_signups WHERE expires_at <= \(now) RETURNING form_token")
    }

    // MARK: Pending sign-ups: the address look-up

    public func isEmailTaken(_ email: String) throws -> Bool {
        let canonical = EmailAddress.canonical(email)
        return try run("look up an email address") { client in
            try await Self.first(Bool.self, client.query(
                "SELECT EXISTS(SELECT 1 FROM users WHERE email_canonical = \(canonical))")) ?? false
        }
    }

    static let pendingColumns = """
        form_token, username, email, password_hash, profile::text, language, return_to, code_hash, link_hash, \
        wrong_tries, codes_sent, last_sent_at, expires_at, created_at, passkey, javascript
        """

    static func pending(_ rows: PostgresRowSequence) async throws -> PendingSignup? {
        for try await (token, username, email, hash, profile, language, returnTo, codeHash, linkHash, tries, sent, lastSent, expires, created, passkey, javascript)
            in rows.decode((String, String, String, String, String, String, String, String, String, Int, Int, Date, Date, Date, String, Bool).self) {
            return PendingSignup(formToken: token, username: username, email: email, passwordHash: hash,
                                 profile: ProfileValue.profile(fromJSON: profile), language: language, returnTo: returnTo,
                                 codeHash: codeHash, linkHash: linkHash, wrongTries: tries, codesSent: sent,
                                 lastSentAt: lastSent, expiresAt: expires, createdAt: created,
                                 passkey: try NewPasskey.fromJSON(passkey), ranJavaScript: javascript)
        }
        return nil
    }
}
