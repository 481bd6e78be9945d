import Foundation
import SignupDomain
import GRDB

extension SQLiteAccountStore {
    // MARK: Reads

    public func isUsernameTaken(_ username: String, at now: Date) throws -> Bool {
        let canonical = Username.canonical(username)
        // The live form asks this once per pause in typing. One statement is atomic on its
        // own, so it runs outside GRDB's read transaction (whose BEGIN, COMMIT and
        // `query_only` toggles, and the SELECT itself, were prepared every call: about 218,000
        // instructions a look-up, against about 42,000 with the cached statement).
        let database = try usableDatabase()
        return try database.unsafeRead { db in
            try Self.isUsernameTaken(canonical, at: now, db)
        }
    }

    /// Also inside the sign-up's write transaction: a cached statement works in either.
    static func isUsernameTaken(_ canonical: String, at now: Date, _ db: Database) throws -> Bool {
        let statement = try db.cachedStatement(sql: """
            SELECT EXISTS(SELECT 1 FROM users WHERE username_canonical = ?)
                OR EXISTS(SELECT 1 FROM pending_signups WHERE username_canonical = ? AND expires_at > ?)
                OR EXISTS(SELECT 1 FROM retired_usernames WHERE username_canonical = ? AND until > ?)
            """)
        return try Bool.fetchOne(statement, arguments: [canonical, canonical, now, canonical, now]) ?? false
    }

    public func isFormTokenUsed(_ formToken: String) throws -> Bool {
        try read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM users WHERE form_token = ?)",
                              arguments: [formToken]) ?? false
        }
    }

    public func account(named username: String) throws -> Account? {
        try read { db in
            try Self.fetchAccounts(db, where: "username_canonical = ?", [Username.canonical(username)]).first
        }
    }

    public func allAccounts() throws -> [Account] {
        try read { db in try Self.fetchAccounts(db, where: "1", []) }
    }

    public func checkReadiness() throws {
        // Through `read`, so a deleted or replaced file shows here as it would on a write.
        _ = try read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    // MARK: Writes

    public func createAccount(_ account: NewAccount) throws -> Account {
        do {
            return try write { db in
                try db.execute(
                    sql: """
                    INSERT INTO users (username, username_canonical, email, password_hash, form_token, profile,
                                       email_canonical, email_verified_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    arguments: [account.username, Username.canonical(account.username), account.email,
                                account.passwordHash, account.formToken, ProfileValue.json(account.profile),
                                account.emailVerifiedAt.map { _ in EmailAddress.canonical(account.email) },
                                account.emailVerifiedAt])
                let id = db.lastInsertedRowID
                if let passkey = account.passkey { try Self.insert(passkey, forAccount: id, db) }
                if let link = account.providerLink {
                    try Self.insert(link, forAccount: id, at: account.emailVerifiedAt ?? Date(), db)
                }
                guard let stored = try Self.fetchAccounts(db, where: "id = ?", [id]).first else {
                    throw DatabaseError(message: "the new account could not be read back")
                }
                if account.announce { try Self.enqueue(OutboxEvent.accountCreated(stored, provider: account.providerLink?.provider), db) }
                return stored
            }
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY
                    && error.message?.contains("passkeys") == true {
            throw PasskeyError.credentialExists
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY
                    && error.message?.contains("provider_links") == true {
            throw ProviderLinkError.linkedElsewhere
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            // The message names the index that refused the row.
            if error.message?.contains("form_token") == true { throw AccountCreationError.formAlreadyUsed }
            if error.message?.contains("email_canonical") == true { throw AccountCreationError.emailTaken }
            throw AccountCreationError.usernameTaken
        }
    }

    /// A sign-up's passkey, in the transaction that makes its account: the user handle it was
    /// made for becomes the account's.
    static func insert(_ passkey: NewPasskey, forAccount id: Int64, _ db: Database) throws {
        try db.execute(sql: "UPDATE users SET user_handle = ? WHERE id = ?", arguments: [Data(passkey.userHandle), id])
        try insert(passkey.passkey(accountID: id), db)
    }

    static func insert(_ passkey: Passkey, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO passkeys (credential_id, user_id, public_key, algorithm, sign_count, transports,
                                  backup_eligible, backed_up, created_at, last_used_at, name)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [Data(passkey.credentialID), passkey.accountID, Data(passkey.publicKey), passkey.algorithm,
                             Int64(passkey.signCount), Passkey.joined(passkey.transports), passkey.isBackupEligible,
                             passkey.isBackedUp, passkey.createdAt, passkey.lastUsedAt, passkey.name])
    }

    public func reserveUsernames(_ usernames: [String]) throws {
        try write { db in
            for username in usernames {
                try db.execute(
                    sql: """
                    INSERT INTO users (username, username_canonical, email, password_hash)
                    VALUES (?, ?, '', '!') ON CONFLICT(username_canonical) DO NOTHING
                    """,
                    arguments: [username, Username.canonical(username)])
            }
        }
    }

    public func secret(named name: String, createdBy make: () -> [UInt8]) throws -> [UInt8] {
        let candidate = make()
        return try write { db in
            try db.execute(sql: "INSERT INTO server_secrets (name, value) VALUES (?, ?) ON CONFLICT(name) DO NOTHING",
                           arguments: [name, Data(candidate)])
            let stored = try Data.fetchOne(db, sql: "SELECT value FROM server_secrets WHERE name = ?", arguments: [name])
            return stored.map { [UInt8]($0) } ?? candidate
        }
    }

    // MARK: Changes to accounts

    public func changePassword(ofAccount id: Int64, from expected: String, to newHash: String, keeping idHash: String?,
                               events: [OutboxEvent]) throws -> Int? {
        try write { db -> Int? in
            try db.execute(sql: "UPDATE users SET password_hash = ? WHERE id = ? AND password_hash = ?",
                           arguments: [newHash, id, expected])
            guard db.changesCount == 1 else { return nil }
            try db.execute(sql: "DELETE FROM sign_in_sessions WHERE user_id = ? AND id_hash IS NOT ?", arguments: [id, idHash])
            let ended = db.changesCount
            // A recovery still open would replace the password just chosen.
            try db.execute(sql: "DELETE FROM account_recoveries WHERE account_id = ?", arguments: [id])
            for event in events { try Self.enqueue(event, db) }
            return ended
        }
    }

    public func deleteAccount(id: Int64, reservingUsernameUntil until: Date, events: [OutboxEvent]) throws -> Bool {
        try write { db -> Bool in
            guard let canonical = try String.fetchOne(db, sql: "DELETE FROM users WHERE id = ? RETURNING username_canonical",
                                                      arguments: [id]) else { return false }
            // Sessions, passkeys and recoveries go with it (ON DELETE CASCADE).
            try db.execute(sql: "INSERT OR REPLACE INTO retired_usernames (username_canonical, until) VALUES (?, ?)",
                           arguments: [canonical, until])
            for event in events { try Self.enqueue(event, db) }
            return true
        }
    }

    public func setAccountDisabled(id: Int64, at date: Date?, events: [OutboxEvent]) throws -> Int? {
        try write { db -> Int? in
            try db.execute(sql: "UPDATE users SET disabled_at = ? WHERE id = ? AND (disabled_at IS NULL) = ?",
                           arguments: [date, id, date != nil])
            guard db.changesCount == 1 else { return nil }
            var ended = 0
            if date != nil {
                try db.execute(sql: "DELETE FROM sign_in_sessions WHERE user_id = ?", arguments: [id])
                ended = db.changesCount
                try db.execute(sql: "DELETE FROM account_recoveries WHERE account_id = ?", arguments: [id])
            }
            for event in events { try Self.enqueue(event, db) }
            return ended
        }
    }

    public func removeEndedUsernameReservations(at now: Date) throws -> Int {
        try removeRows("DELETE FROM retired_usernames WHERE until <= ?", [now])
    }

    public func account(withProvedEmail email: String) throws -> Account? {
        try read { db in try Self.fetchAccounts(db, where: "email_canonical = ?", [EmailAddress.canonical(email)]).first }
    }

    public func account(id: Int64) throws -> Account? {
        try read { db in try Self.fetchAccounts(db, where: "id = ?", [id]).first }
    }
}
