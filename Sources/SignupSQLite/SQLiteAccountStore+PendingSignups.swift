import Foundation
import SignupDomain
import GRDB

extension SQLiteAccountStore {
    // MARK: Pending sign-ups

    public func startPendingSignup(_ pending: PendingSignup, mail: OutboxEvent, at now: Date) throws {
        let canonical = Username.canonical(pending.username)
        try write { db in
            // A hold that has ended releases its name before anyone asks for it again.
            try db.execute(sql: "DELETE FROM pending_signups WHERE expires_at <= ? OR form_token = ?",
                           arguments: [now, pending.formToken])
            if try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM users WHERE form_token = ?)",
                                 arguments: [pending.formToken]) == true {
                throw AccountCreationError.formAlreadyUsed
            }
            if try Self.isUsernameTaken(canonical, at: now, db) { throw AccountCreationError.usernameTaken }
            try db.execute(sql: """
                INSERT INTO pending_signups (form_token, username, username_canonical, email, password_hash, profile,
                    language, return_to, code_hash, link_hash, wrong_tries, codes_sent, last_sent_at, expires_at, created_at,
                    passkey, javascript)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [pending.formToken, pending.username, canonical, pending.email, pending.passwordHash,
                                 ProfileValue.json(pending.profile), pending.language, pending.returnTo, pending.codeHash,
                                 pending.linkHash, pending.wrongTries, pending.codesSent, pending.lastSentAt,
                                 pending.expiresAt, pending.createdAt, NewPasskey.json(pending.passkey), pending.ranJavaScript])
            try Self.enqueue(mail, db)
        }
    }

    public func pendingSignup(formToken: String, at now: Date) throws -> PendingSignup? {
        try read { db in try Self.fetchPending(db, where: "form_token = ? AND expires_at > ?", [formToken, now]) }
    }

    public func pendingSignup(linkHash: String, at now: Date) throws -> PendingSignup? {
        try read { db in try Self.fetchPending(db, where: "link_hash = ? AND expires_at > ?", [linkHash, now]) }
    }

    public func spendCodeTry(formToken: String, maximum: Int) throws -> Int? {
        try write { db in
            try Int.fetchOne(db, sql: """
                UPDATE pending_signups SET wrong_tries = wrong_tries + 1 WHERE form_token = ? AND wrong_tries < ?
                RETURNING wrong_tries
                """, arguments: [formToken, maximum])
        }
    }

    public func replaceCode(formToken: String, codeHash: String, linkHash: String, sentAt: Date, expiresAt: Date,
                            mail: OutboxEvent) throws -> Bool {
        try write { db in
            try db.execute(sql: """
                UPDATE pending_signups SET code_hash = ?, link_hash = ?, wrong_tries = 0, codes_sent = codes_sent + 1,
                    last_sent_at = ?, expires_at = ?
                WHERE form_token = ? AND expires_at > ?
                """, arguments: [codeHash, linkHash, sentAt, expiresAt, formToken, sentAt])
            guard db.changesCount == 1 else { return false }
            try Self.enqueue(mail, db)
            return true
        }
    }

    public func completePendingSignup(formToken: String, at now: Date, announce: Bool) throws -> Account? {
        do {
            return try write { db -> Account? in
                guard let pending = try Self.fetchPending(db, where: "form_token = ? AND expires_at > ?", [formToken, now]) else {
                    return nil
                }
                // Deleted first, in the same transaction: the proof works once, whatever follows.
                try db.execute(sql: "DELETE FROM pending_signups WHERE form_token = ?", arguments: [formToken])
                try db.execute(sql: """
                    INSERT INTO users (username, username_canonical, email, email_canonical, email_verified_at,
                        password_hash, form_token, profile, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [pending.username, Username.canonical(pending.username), pending.email,
                                     EmailAddress.canonical(pending.email), now, pending.passwordHash, formToken,
                                     ProfileValue.json(pending.profile), now])
                let id = db.lastInsertedRowID
                if let passkey = pending.passkey { try Self.insert(passkey, forAccount: id, db) }
                guard let stored = try Self.fetchAccounts(db, where: "id = ?", [id]).first else {
                    throw DatabaseError(message: "the new account could not be read back")
                }
                if announce { try Self.enqueue(OutboxEvent.accountCreated(stored), db) }
                return stored
            }
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY
                    && error.message?.contains("passkeys") == true {
            try cancelPendingSignup(formToken: formToken)
            throw PasskeyError.credentialExists
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            // The transaction rolled back; the pending sign-up can never complete now, so it goes.
            try cancelPendingSignup(formToken: formToken)
            if error.message?.contains("email_canonical") == true { throw AccountCreationError.emailTaken }
            if error.message?.contains("form_token") == true { throw AccountCreationError.formAlreadyUsed }
            throw AccountCreationError.usernameTaken
        }
    }

    public func cancelPendingSignup(formToken: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM pending_signups WHERE form_token = ?", arguments: [formToken])
        }
    }

    public func removeExpiredPendingSignups(at now: Date) throws -> Int {
        try removeRows("DELETE FROM pending_signups WHERE expires_at <= ?", [now])
    }

    // MARK: Pending sign-ups: the address look-up

    public func isEmailTaken(_ email: String) throws -> Bool {
        try read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM users WHERE email_canonical = ?)",
                              arguments: [EmailAddress.canonical(email)]) ?? false
        }
    }

    static func fetchPending(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> PendingSignup? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM pending_signups WHERE \(condition)", arguments: arguments) else {
            return nil
        }
        return PendingSignup(
            formToken: row["form_token"], username: row["username"], email: row["email"], passwordHash: row["password_hash"],
            profile: ProfileValue.profile(fromJSON: row["profile"]), language: row["language"], returnTo: row["return_to"],
            codeHash: row["code_hash"], linkHash: row["link_hash"], wrongTries: row["wrong_tries"], codesSent: row["codes_sent"],
            lastSentAt: row["last_sent_at"], expiresAt: row["expires_at"], createdAt: row["created_at"],
            passkey: try NewPasskey.fromJSON(row["passkey"]), ranJavaScript: row["javascript"])
    }
}
