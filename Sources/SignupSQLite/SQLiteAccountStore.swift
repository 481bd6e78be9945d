import Foundation
import SignupDomain
import GRDB

/// Accounts in SQLite through GRDB: versioned migrations, one `users` table whose canonical
/// username is unique, and a commit that reaches the disk before it is acknowledged.
///
/// Two choices protect acknowledged accounts from faults around the process:
/// - The rollback journal (`journal_mode=DELETE`), not WAL. WAL shares its index through a
///   memory-mapped `-shm` file; if anything truncates or replaces that file the process dies
///   of SIGBUS inside SQLite. The rollback journal maps nothing. Sign-ups are rare next to
///   look-ups, so WAL's concurrent writer buys nothing here.
/// - The database file's identity is checked before and after every write. If the file (or
///   its folder) was deleted or replaced, writes would go to a file nobody will open again:
///   the write is refused with `StorageFault`, and the store reopens the file at its path
///   once there is one again (restored by the operator).
public final class SQLiteAccountStore: AccountStore, @unchecked Sendable {
    public let path: String
    private let lock = NSLock()
    /// Guarded by `lock`: the open database and the identity of its file when opened.
    private var database: DatabaseQueue
    private var identity: DatabaseFileIdentity?

    /// Opens (creating and migrating as needed) the database at `path`; its folder is created.
    public init(path: String) throws {
        self.path = path
        database = try Self.open(path: path)
        identity = DatabaseFileIdentity(path: path)
    }

    private static func open(path: String) throws -> DatabaseQueue {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try openExisting(path: path)
    }

    private static func openExisting(path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // An account the server confirmed must survive a crash of the process or the
            // machine: FULL syncs the journal and the database file on every commit.
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        let database = try DatabaseQueue(path: path, configuration: configuration)
        // Outside a transaction (journal modes cannot change inside one). Converts a database
        // that an earlier version left in WAL mode.
        try database.writeWithoutTransaction { db in
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = DELETE")
        }
        try migrator.migrate(database)
        return database
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: users") { db in
            try db.create(table: "users") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("username", .text).notNull()
                table.column("username_canonical", .text).notNull().unique()
                table.column("email", .text).notNull()
                // An argon2id string; "!" marks an account that cannot sign in.
                table.column("password_hash", .text).notNull()
                table.column("created_at", .datetime).notNull().defaults(sql: "CURRENT_TIMESTAMP")
            }
        }
        migrator.registerMigration("v2: one account per form session") { db in
            try db.alter(table: "users") { table in
                table.add(column: "form_token", .text)
            }
            try db.create(index: "users_form_token", on: "users", columns: ["form_token"], unique: true)
        }
        migrator.registerMigration("v3: server secrets") { db in
            try db.create(table: "server_secrets") { table in
                table.primaryKey("name", .text)
                table.column("value", .blob).notNull()
            }
        }
        migrator.registerMigration("v4: account profiles") { db in
            // The policy's stored fields, as one JSON object per account: fields come and go
            // with the policy file, and a column per field would need a migration each time.
            try db.alter(table: "users") { table in
                table.add(column: "profile", .text).notNull().defaults(to: "{}")
            }
        }
        migrator.registerMigration("v5: signed-in sessions") { db in
            // Only the SHA-256 of the cookie's id; every instance using this file shares them.
            try db.create(table: "sign_in_sessions") { table in
                table.primaryKey("id_hash", .text)
                table.column("user_id", .integer).notNull().references("users", onDelete: .cascade)
                table.column("created_at", .datetime).notNull()
                table.column("expires_at", .datetime).notNull()
                table.column("last_seen_at", .datetime).notNull()
            }
            try db.create(index: "sign_in_sessions_user", on: "sign_in_sessions", columns: ["user_id"])
        }
        migrator.registerMigration("v6: shared token buckets") { db in
            // Limits that must hold across instances (failed sign-ins per account).
            try db.create(table: "shared_buckets") { table in
                table.column("bucket", .text).notNull()
                table.column("key", .text).notNull()
                table.column("tokens", .double).notNull()
                table.column("updated_at", .datetime).notNull()
                table.column("full_at", .datetime).notNull()
                table.primaryKey(["bucket", "key"])
            }
        }
        migrator.registerMigration("v7: webhook outbox") { db in
            // Written in the account's own transaction; delivered later, at least once.
            try db.create(table: "webhook_outbox") { table in
                table.primaryKey("id", .text)
                table.column("type", .text).notNull()
                table.column("body", .text).notNull()
                table.column("created_at", .datetime).notNull()
                table.column("state", .text).notNull().defaults(to: "pending")
                table.column("attempts", .integer).notNull().defaults(to: 0)
                table.column("next_attempt_at", .datetime).notNull()
                table.column("last_error", .text)
                table.column("delivered_at", .datetime)
            }
            try db.create(index: "webhook_outbox_due", on: "webhook_outbox", columns: ["state", "next_attempt_at"])
        }
        migrator.registerMigration("v8: one outbox, by channel") { db in
            // Mails go out the way webhooks do: the same table, each row on its channel.
            try db.rename(table: "webhook_outbox", to: "outbox")
            try db.alter(table: "outbox") { table in
                table.add(column: "channel", .text).notNull().defaults(to: "webhook")
            }
            try db.drop(index: "webhook_outbox_due")
            try db.create(index: "outbox_due", on: "outbox", columns: ["channel", "state", "next_attempt_at"])
        }
        migrator.registerMigration("v9: proved addresses and pending sign-ups") { db in
            // Only proved addresses are unique: accounts made before (or without) proofs keep
            // a NULL here, so existing duplicates do not stop the migration.
            try db.alter(table: "users") { table in
                table.add(column: "email_canonical", .text)
                table.add(column: "email_verified_at", .datetime)
            }
            try db.create(index: "users_email_canonical", on: "users", columns: ["email_canonical"], unique: true)
            // A sign-up waiting for its address: no account row until the proof.
            try db.create(table: "pending_signups") { table in
                table.primaryKey("form_token", .text)
                table.column("username", .text).notNull()
                // Unique: one unexpired hold per name (expired ones are deleted before a new one).
                table.column("username_canonical", .text).notNull().unique()
                table.column("email", .text).notNull()
                table.column("password_hash", .text).notNull()
                table.column("profile", .text).notNull()
                table.column("language", .text).notNull()
                table.column("return_to", .text).notNull()
                table.column("code_hash", .text).notNull()
                table.column("link_hash", .text).notNull().unique()
                table.column("wrong_tries", .integer).notNull()
                table.column("codes_sent", .integer).notNull()
                table.column("last_sent_at", .datetime).notNull()
                table.column("expires_at", .datetime).notNull()
                table.column("created_at", .datetime).notNull()
            }
            try db.create(index: "pending_signups_expiry", on: "pending_signups", columns: ["expires_at"])
        }
        migrator.registerMigration("v10: spent proofs of work") { db in
            try db.create(table: "spent_proofs") { table in
                table.primaryKey("challenge", .text)
                table.column("expires_at", .datetime).notNull()
            }
            try db.create(index: "spent_proofs_expiry", on: "spent_proofs", columns: ["expires_at"])
        }
        migrator.registerMigration("v11: passkeys") { db in
            // Added without UNIQUE (SQLite cannot add a unique column); the index makes it so.
            try db.alter(table: "users") { table in table.add(column: "user_handle", .blob) }
            try db.create(index: "users_user_handle", on: "users", columns: ["user_handle"], unique: true)
            try db.create(table: "passkeys") { table in
                table.primaryKey("credential_id", .blob)
                table.column("user_id", .integer).notNull().indexed().references("users", onDelete: .cascade)
                table.column("public_key", .blob).notNull()
                table.column("algorithm", .integer).notNull()
                table.column("sign_count", .integer).notNull()
                table.column("transports", .text).notNull()
                table.column("backup_eligible", .boolean).notNull()
                table.column("backed_up", .boolean).notNull()
                table.column("created_at", .datetime).notNull()
                table.column("last_used_at", .datetime)
            }
        }
        migrator.registerMigration("v12: passkeys made on sign-up forms") { db in
            // JSON (`NewPasskey.json`), "" for none: a passkey waiting, with its sign-up, for a proved address.
            try db.alter(table: "pending_signups") { table in table.add(column: "passkey", .text).notNull().defaults(to: "") }
        }
        migrator.registerMigration("v13: account recoveries") { db in
            // A stand-in for a name with no account has no account_id (see `AccountRecovery`).
            try db.create(table: "account_recoveries") { table in
                table.primaryKey("token", .text)
                table.column("account_id", .integer).indexed().references("users", onDelete: .cascade)
                table.column("code_hash", .text).notNull()
                table.column("link_hash", .text).notNull().unique()
                table.column("wrong_tries", .integer).notNull()
                table.column("language", .text).notNull()
                table.column("expires_at", .datetime).notNull()
                table.column("created_at", .datetime).notNull()
            }
            try db.create(index: "account_recoveries_expiry", on: "account_recoveries", columns: ["expires_at"])
        }
        migrator.registerMigration("v14: sessions their owners can see") { db in
            // Sessions from before have no device or network to show, and count as proved
            // when they began; each gets a random handle.
            try db.alter(table: "sign_in_sessions") { table in
                table.add(column: "authenticated_at", .datetime)
                table.add(column: "device", .text).notNull().defaults(to: "")
                table.add(column: "network", .text).notNull().defaults(to: "")
                table.add(column: "public_id", .text)
            }
            try db.execute(sql: """
                UPDATE sign_in_sessions SET authenticated_at = created_at, public_id = lower(hex(randomblob(8)))
                """)
            try db.create(index: "sign_in_sessions_public_id", on: "sign_in_sessions", columns: ["public_id"], unique: true)
        }
        migrator.registerMigration("v15: accounts their owners and operators change") { db in
            try db.alter(table: "passkeys") { table in table.add(column: "name", .text).notNull().defaults(to: "") }
            try db.alter(table: "users") { table in table.add(column: "disabled_at", .datetime) }
            // A deleted account's name, kept from new accounts for a while (`deleteAccount`).
            try db.create(table: "retired_usernames") { table in
                table.primaryKey("username_canonical", .text)
                table.column("until", .datetime).notNull()
            }
        }
        migrator.registerMigration("v16: address changes") { db in
            // One waiting change per account; the old address is the account's until it is proved.
            try db.create(table: "email_changes") { table in
                table.primaryKey("account_id", .integer).references("users", onDelete: .cascade)
                table.column("new_email", .text).notNull()
                table.column("code_hash", .text).notNull()
                table.column("wrong_tries", .integer).notNull()
                table.column("expires_at", .datetime).notNull()
                table.column("created_at", .datetime).notNull()
            }
            // The old address's way back, for a week.
            try db.create(table: "email_undos") { table in
                table.primaryKey("link_hash", .text)
                table.column("account_id", .integer).notNull().indexed().references("users", onDelete: .cascade)
                table.column("old_email", .text).notNull()
                table.column("old_verified_at", .datetime)
                table.column("expires_at", .datetime).notNull()
            }
        }
        migrator.registerMigration("v17: second factors") { db in
            try db.create(table: "second_factors") { table in
                table.primaryKey("account_id", .integer).references("users", onDelete: .cascade)
                table.column("sealed_secret", .blob).notNull()
                table.column("enabled_at", .datetime)
                table.column("last_step", .integer).notNull()
                table.column("created_at", .datetime).notNull()
            }
            try db.create(table: "second_factor_codes") { table in
                table.column("account_id", .integer).notNull().references("users", onDelete: .cascade)
                table.column("code_hash", .text).notNull()
                table.primaryKey(["account_id", "code_hash"])
            }
        }
        migrator.registerMigration("v18: provider identities") { db in
            // Who a provider says a person is (its issuer and subject), linked to one account.
            try db.create(table: "provider_links") { table in
                table.column("issuer", .text).notNull()
                table.column("subject", .text).notNull()
                table.primaryKey(["issuer", "subject"])
                table.column("account_id", .integer).notNull().indexed().references("users", onDelete: .cascade)
                table.column("provider", .text).notNull()
                table.column("email", .text).notNull()
                table.column("linked_at", .datetime).notNull()
            }
        }
        migrator.registerMigration("v19: wrong second-factor codes in a row") { db in
            // Counted apart from the password's failures (issue 52): no right password clears it.
            try db.alter(table: "second_factors") { table in
                table.add(column: "failed_codes", .integer).notNull().defaults(to: 0)
            }
        }
        migrator.registerMigration("v20: what an undo takes back") { db in
            // When the address changed and the password then (issue 52): an undo removes every
            // way in added since, and brings the password back. Older links: 7 days before expiry.
            try db.alter(table: "email_undos") { table in
                table.add(column: "changed_at", .datetime)
                table.add(column: "password_hash", .text)
            }
            try db.execute(sql: "UPDATE email_undos SET changed_at = datetime(expires_at, '-7 days') WHERE changed_at IS NULL")
        }
        return migrator
    }

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
    private static func isUsernameTaken(_ canonical: String, at now: Date, _ db: Database) throws -> Bool {
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
    private static func insert(_ passkey: NewPasskey, forAccount id: Int64, _ db: Database) throws {
        try db.execute(sql: "UPDATE users SET user_handle = ? WHERE id = ?", arguments: [Data(passkey.userHandle), id])
        try insert(passkey.passkey(accountID: id), db)
    }

    private static func insert(_ passkey: Passkey, _ db: Database) throws {
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

    // MARK: Signed-in sessions

    public func startSignInSession(_ session: NewSignInSession) throws {
        try write { db in
            try db.execute(
                sql: """
                INSERT INTO sign_in_sessions (id_hash, user_id, created_at, expires_at, last_seen_at, authenticated_at, device,
                    network, public_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                arguments: [session.idHash, session.accountID, session.createdAt, session.expiresAt, session.createdAt,
                            session.authenticatedAt, session.device, session.network, session.publicID])
        }
    }

    public func startSignInSession(_ session: NewSignInSession, keepingAtMost keep: Int) throws -> [String] {
        try write { db -> [String] in
            try db.execute(sql: """
                INSERT INTO sign_in_sessions (id_hash, user_id, created_at, expires_at, last_seen_at, authenticated_at, device,
                    network, public_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [session.idHash, session.accountID, session.createdAt, session.expiresAt, session.createdAt,
                                  session.authenticatedAt, session.device, session.network, session.publicID])
            // The least recently used go first; the new one always stays.
            return try String.fetchAll(db, sql: """
                DELETE FROM sign_in_sessions WHERE user_id = ? AND id_hash != ? AND id_hash NOT IN (
                    SELECT id_hash FROM sign_in_sessions WHERE user_id = ? AND id_hash != ?
                    ORDER BY last_seen_at DESC, created_at DESC, id_hash LIMIT ?)
                RETURNING id_hash
                """, arguments: [session.accountID, session.idHash, session.accountID, session.idHash, max(0, keep - 1)])
        }
    }

    public func signedInAccount(idHash: String, at now: Date, rules: SignInSessionRules) throws -> Account? {
        let found = try read { db -> (Account, Date)? in
            guard let row = try Row.fetchOne(
                db,
                sql: """
                SELECT users.id, username, email, password_hash, users.created_at, profile, email_verified_at, disabled_at,
                       last_seen_at
                FROM sign_in_sessions JOIN users ON users.id = sign_in_sessions.user_id
                WHERE id_hash = ? AND expires_at > ? AND last_seen_at > ?
                """,
                arguments: [idHash, now, now.addingTimeInterval(-rules.idleTimeout)])
            else { return nil }
            return (Self.account(row), row["last_seen_at"])
        }
        guard let (account, lastSeen) = found else { return nil }
        if now.timeIntervalSince(lastSeen) >= rules.touchInterval {
            try write { db in
                try db.execute(sql: "UPDATE sign_in_sessions SET last_seen_at = ? WHERE id_hash = ?", arguments: [now, idHash])
            }
        }
        return account
    }

    public func endSignInSession(idHash: String) throws {
        try write { db in try db.execute(sql: "DELETE FROM sign_in_sessions WHERE id_hash = ?", arguments: [idHash]) }
    }

    public func endSignInSessions(username: String) throws -> Int {
        try write { db in
            try db.execute(
                sql: """
                DELETE FROM sign_in_sessions
                WHERE user_id IN (SELECT id FROM users WHERE username_canonical = ?)
                """,
                arguments: [Username.canonical(username)])
            return db.changesCount
        }
    }

    public func removeEndedSignInSessions(at now: Date, rules: SignInSessionRules) throws -> Int {
        try write { db in
            try db.execute(sql: "DELETE FROM sign_in_sessions WHERE expires_at <= ? OR last_seen_at <= ?",
                           arguments: [now, now.addingTimeInterval(-rules.idleTimeout)])
            return db.changesCount
        }
    }

    public func signInSessions(ofAccount id: Int64, at now: Date, rules: SignInSessionRules) throws -> [SignInSessionSummary] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT public_id, id_hash, created_at, last_seen_at, authenticated_at, expires_at, device, network
                FROM sign_in_sessions WHERE user_id = ? AND expires_at > ? AND last_seen_at > ?
                ORDER BY last_seen_at DESC, created_at DESC
                """, arguments: [id, now, now.addingTimeInterval(-rules.idleTimeout)]).map { row in
                SignInSessionSummary(publicID: row["public_id"], idHash: row["id_hash"], createdAt: row["created_at"],
                                     lastSeenAt: row["last_seen_at"], authenticatedAt: row["authenticated_at"],
                                     expiresAt: row["expires_at"], device: row["device"], network: row["network"])
            }
        }
    }

    public func endSignInSession(publicID: String, ofAccount id: Int64) throws -> Bool {
        try write { db in
            try db.execute(sql: "DELETE FROM sign_in_sessions WHERE public_id = ? AND user_id = ?", arguments: [publicID, id])
            return db.changesCount == 1
        }
    }

    public func endSignInSessions(ofAccount id: Int64, keeping idHash: String?) throws -> Int {
        try write { db in
            try db.execute(sql: "DELETE FROM sign_in_sessions WHERE user_id = ? AND id_hash IS NOT ?", arguments: [id, idHash])
            return db.changesCount
        }
    }

    public func recordAuthentication(idHash: String, at date: Date) throws -> Bool {
        try write { db in
            try db.execute(sql: "UPDATE sign_in_sessions SET authenticated_at = ? WHERE id_hash = ?", arguments: [date, idHash])
            return db.changesCount == 1
        }
    }

    // MARK: Shared token buckets

    public func spendSharedTokens(bucket: String, key: String, cost: Double, rate: SharedBucketRate, at now: Date) throws -> Double {
        let read = { (db: Database) throws -> Double in
            guard let row = try Row.fetchOne(db, sql: "SELECT tokens, updated_at FROM shared_buckets WHERE bucket = ? AND key = ?",
                                             arguments: [bucket, key]) else { return rate.burst }
            return rate.refilled(row["tokens"], updated: row["updated_at"], now: now)
        }
        guard cost > 0 else { return try self.read(read) }
        // One transaction: another instance's spend waits for it (SQLite has one writer).
        return try write { db in
            let tokens = try read(db)
            guard tokens >= cost else { return tokens }
            let left = tokens - cost
            try db.execute(
                sql: """
                INSERT INTO shared_buckets (bucket, key, tokens, updated_at, full_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(bucket, key) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at,
                    full_at = excluded.full_at
                """,
                arguments: [bucket, key, left, now, rate.fullAt(left, now: now)])
            return tokens
        }
    }

    public func resetSharedTokens(bucket: String, key: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM shared_buckets WHERE bucket = ? AND key = ?", arguments: [bucket, key])
        }
    }

    public func removeFullSharedBuckets(at now: Date) throws -> Int {
        try write { db in
            try db.execute(sql: "DELETE FROM shared_buckets WHERE full_at <= ?", arguments: [now])
            return db.changesCount
        }
    }

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
                    passkey)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [pending.formToken, pending.username, canonical, pending.email, pending.passwordHash,
                                 ProfileValue.json(pending.profile), pending.language, pending.returnTo, pending.codeHash,
                                 pending.linkHash, pending.wrongTries, pending.codesSent, pending.lastSentAt,
                                 pending.expiresAt, pending.createdAt, NewPasskey.json(pending.passkey)])
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
        try write { db in
            try db.execute(sql: "DELETE FROM pending_signups WHERE expires_at <= ?", arguments: [now])
            return db.changesCount
        }
    }

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

    private static func passkey(_ row: Row) -> Passkey {
        Passkey(credentialID: Array(row["credential_id"] as Data), accountID: row["user_id"],
                publicKey: Array(row["public_key"] as Data), algorithm: row["algorithm"],
                signCount: UInt32(clamping: row["sign_count"] as Int64), transports: Passkey.split(row["transports"]),
                isBackupEligible: row["backup_eligible"], isBackedUp: row["backed_up"], createdAt: row["created_at"],
                lastUsedAt: row["last_used_at"], name: row["name"])
    }

    public func spendProof(_ challenge: String, until expiresAt: Date) throws -> Bool {
        try write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO spent_proofs (challenge, expires_at) VALUES (?, ?)",
                           arguments: [challenge, expiresAt])
            return db.changesCount == 1
        }
    }

    public func removeExpiredProofs(at now: Date) throws -> Int {
        try write { db in
            try db.execute(sql: "DELETE FROM spent_proofs WHERE expires_at <= ?", arguments: [now])
            return db.changesCount
        }
    }

    public func isEmailTaken(_ email: String) throws -> Bool {
        try read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM users WHERE email_canonical = ?)",
                              arguments: [EmailAddress.canonical(email)]) ?? false
        }
    }

    private static func fetchPending(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> PendingSignup? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM pending_signups WHERE \(condition)", arguments: arguments) else {
            return nil
        }
        return PendingSignup(
            formToken: row["form_token"], username: row["username"], email: row["email"], passwordHash: row["password_hash"],
            profile: ProfileValue.profile(fromJSON: row["profile"]), language: row["language"], returnTo: row["return_to"],
            codeHash: row["code_hash"], linkHash: row["link_hash"], wrongTries: row["wrong_tries"], codesSent: row["codes_sent"],
            lastSentAt: row["last_sent_at"], expiresAt: row["expires_at"], createdAt: row["created_at"],
            passkey: try NewPasskey.fromJSON(row["passkey"]))
    }

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
        try write { db in
            try db.execute(sql: "DELETE FROM account_recoveries WHERE expires_at <= ?", arguments: [now])
            return db.changesCount
        }
    }

    public func account(withProvedEmail email: String) throws -> Account? {
        try read { db in try Self.fetchAccounts(db, where: "email_canonical = ?", [EmailAddress.canonical(email)]).first }
    }

    public func account(id: Int64) throws -> Account? {
        try read { db in try Self.fetchAccounts(db, where: "id = ?", [id]).first }
    }

    private static func fetchRecovery(_ db: Database, where condition: String,
                                      _ arguments: StatementArguments) throws -> AccountRecovery? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM account_recoveries WHERE \(condition)", arguments: arguments) else {
            return nil
        }
        return AccountRecovery(token: row["token"], accountID: row["account_id"], codeHash: row["code_hash"],
                               linkHash: row["link_hash"], wrongTries: row["wrong_tries"], language: row["language"],
                               expiresAt: row["expires_at"], createdAt: row["created_at"])
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
        try write { db in
            try db.execute(sql: "DELETE FROM retired_usernames WHERE until <= ?", arguments: [now])
            return db.changesCount
        }
    }

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

    private static func insertRecoveryCodes(_ hashes: [String], ofAccount id: Int64, _ db: Database) throws {
        for hash in hashes {
            try db.execute(sql: "INSERT OR IGNORE INTO second_factor_codes (account_id, code_hash) VALUES (?, ?)", arguments: [id, hash])
        }
    }

    // MARK: Outbox

    private static func enqueue(_ event: OutboxEvent, _ db: Database) throws {
        try db.execute(
            sql: "INSERT INTO outbox (id, channel, type, body, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [event.id, event.channel.rawValue, event.type, event.body, event.createdAt, event.createdAt])
    }

    public func claimDueEvents(channel: OutboxChannel, at now: Date, limit: Int, lease: TimeInterval) throws -> [ClaimedEvent] {
        // One write transaction: SQLite has one writer, so two instances never claim the same.
        try write { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT id, type, body, created_at, attempts FROM outbox
                WHERE channel = ? AND state = 'pending' AND next_attempt_at <= ? ORDER BY created_at, id LIMIT ?
                """, arguments: [channel.rawValue, now, limit])
            for row in rows {
                try db.execute(sql: "UPDATE outbox SET next_attempt_at = ? WHERE id = ?",
                               arguments: [now.addingTimeInterval(lease), row["id"] as String])
            }
            return rows.map { row in
                ClaimedEvent(event: OutboxEvent(id: row["id"], type: row["type"], body: row["body"], createdAt: row["created_at"],
                                                channel: channel),
                             attempts: row["attempts"])
            }
        }
    }

    public func markDelivered(eventID: String, attempts: Int, at now: Date) throws {
        try write { db in
            try db.execute(sql: """
                UPDATE outbox SET state = 'delivered', attempts = ?, delivered_at = ?, last_error = NULL,
                    body = CASE WHEN channel = 'mail' THEN '' ELSE body END
                WHERE id = ?
                """,
                           arguments: [attempts, now, eventID])
        }
    }

    public func scheduleRetry(eventID: String, attempts: Int, at next: Date, error: String) throws {
        try write { db in
            try db.execute(sql: "UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ?",
                           arguments: [attempts, next, error, eventID])
        }
    }

    public func park(eventID: String, attempts: Int, error: String) throws {
        try write { db in
            try db.execute(sql: "UPDATE outbox SET state = 'parked', attempts = ?, last_error = ? WHERE id = ?",
                           arguments: [attempts, error, eventID])
        }
    }

    public func outboxStatus(channel: OutboxChannel) throws -> OutboxStatus {
        try read { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT (SELECT COUNT(*) FROM outbox WHERE channel = ?1 AND state = 'pending') AS pending,
                       (SELECT COUNT(*) FROM outbox WHERE channel = ?1 AND state = 'parked') AS parked,
                       (SELECT MIN(created_at) FROM outbox WHERE channel = ?1 AND state = 'pending') AS oldest
                """, arguments: [channel.rawValue])
            return OutboxStatus(pending: row?["pending"] ?? 0, parked: row?["parked"] ?? 0, oldestPendingCreatedAt: row?["oldest"])
        }
    }

    public func removeDeliveredEvents(deliveredBefore date: Date) throws -> Int {
        try write { db in
            try db.execute(sql: "DELETE FROM outbox WHERE state = 'delivered' AND delivered_at < ?", arguments: [date])
            return db.changesCount
        }
    }

    // MARK: The database file under us

    private func read<T>(_ body: (Database) throws -> T) throws -> T {
        let database = try usableDatabase()
        return try database.read(body)
    }

    /// Writes only into the file at `path`, and acknowledges only what reached it: checked
    /// before (so nothing is written into a deleted file) and after the commit (so a file
    /// replaced during the write is not taken for success).
    private func write<T>(_ body: (Database) throws -> T) throws -> T {
        let database = try usableDatabase()
        let result = try database.write(body)
        try checkIdentity()
        return result
    }

    /// The open database if its file is still the one at `path`; otherwise a reopened one,
    /// or `StorageFault` while that is not possible.
    private func usableDatabase() throws -> DatabaseQueue {
        try lock.withLock {
            if identity != nil, DatabaseFileIdentity(path: path) == identity { return database }
            return try recover()
        }
    }

    private func checkIdentity() throws {
        try lock.withLock {
            guard DatabaseFileIdentity(path: path) == identity else {
                throw StorageFault("The database file \(path) was deleted or replaced during a write; the write is not trusted.")
            }
        }
    }

    /// Called with `lock` held. Reopens whatever database file is at `path` now (the
    /// operator restored or replaced it). A missing file is not created again: the folder
    /// may be an unmounted volume's mount point, and a fresh empty database there would
    /// quietly take sign-ups that belong on the volume. Until a file is back, writes fail.
    /// Tried on every request while the fault lasts: a missing file costs one `stat`, and
    /// the first request after the operator's fix succeeds.
    private func recover() throws -> DatabaseQueue {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StorageFault("The database file \(path) was deleted (or its volume is gone); restore it or restart the server.")
        }
        let reopened: DatabaseQueue
        do {
            reopened = try Self.openExisting(path: path)
        } catch {
            throw StorageFault("The database file \(path) cannot be opened: \(error)")
        }
        try? database.close()
        database = reopened
        identity = DatabaseFileIdentity(path: path)
        return reopened
    }

    private static func fetchAccounts(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> [Account] {
        try Row.fetchAll(
            db,
            sql: """
            SELECT id, username, email, password_hash, created_at, profile, email_verified_at, disabled_at FROM users
            WHERE \(condition) ORDER BY id
            """,
            arguments: arguments
        ).map(account)
    }

    private static func account(_ row: Row) -> Account {
        Account(id: row["id"], username: row["username"], email: row["email"],
                passwordHash: row["password_hash"], createdAt: row["created_at"],
                profile: ProfileValue.profile(fromJSON: row["profile"]), emailVerifiedAt: row["email_verified_at"],
                disabledAt: row["disabled_at"])
    }
}

// MARK: Provider identities (issue 45)

extension SQLiteAccountStore {
    fileprivate static func insert(_ link: NewProviderLink, forAccount id: Int64, at date: Date, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO provider_links (issuer, subject, account_id, provider, email, linked_at) VALUES (?, ?, ?, ?, ?, ?)
            """, arguments: [link.issuer, link.subject, id, link.provider, link.email, date])
    }

    public func account(linkedTo issuer: String, subject: String) throws -> Account? {
        try read { db in
            try Self.fetchAccounts(db, where: "id = (SELECT account_id FROM provider_links WHERE issuer = ? AND subject = ?)",
                                   [issuer, subject]).first
        }
    }

    public func providerLinks(ofAccount id: Int64) throws -> [ProviderLink] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT account_id, provider, issuer, subject, email, linked_at FROM provider_links
                WHERE account_id = ? ORDER BY linked_at, provider
                """, arguments: [id]).map { row in
                ProviderLink(accountID: row["account_id"], provider: row["provider"], issuer: row["issuer"],
                             subject: row["subject"], email: row["email"], linkedAt: row["linked_at"])
            }
        }
    }

    public func linkProvider(_ link: NewProviderLink, toAccount id: Int64, at date: Date, events: [OutboxEvent]) throws {
        try write { db in
            if let owner = try Int64.fetchOne(db, sql: "SELECT account_id FROM provider_links WHERE issuer = ? AND subject = ?",
                                              arguments: [link.issuer, link.subject]) {
                guard owner == id else { throw ProviderLinkError.linkedElsewhere }
                return
            }
            try Self.insert(link, forAccount: id, at: date, db)
            for event in events { try Self.enqueue(event, db) }
        }
    }

    public func unlinkProvider(issuer: String, subject: String, fromAccount id: Int64,
                               events: [OutboxEvent]) throws -> WayInRemoval {
        try write { db -> WayInRemoval in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM provider_links WHERE issuer = ? AND subject = ? AND account_id = ?)",
                                    arguments: [issuer, subject, id]) == true else { return .notFound }
            // In the write transaction (SQLite's one writer): nothing is removed between the count and the delete.
            let otherLinks = try Int.fetchOne(db, sql: "SELECT count(*) FROM provider_links WHERE account_id = ?",
                                              arguments: [id]) ?? 0
            let passkeys = try Int.fetchOne(db, sql: "SELECT count(*) FROM passkeys WHERE user_id = ?", arguments: [id]) ?? 0
            let hasPassword = try Bool.fetchOne(db, sql: "SELECT password_hash != ? FROM users WHERE id = ?",
                                                arguments: [Account.unusablePasswordHash, id]) ?? false
            guard otherLinks > 1 || passkeys > 0 || hasPassword else { return .lastWayIn }
            try db.execute(sql: "DELETE FROM provider_links WHERE issuer = ? AND subject = ? AND account_id = ?",
                           arguments: [issuer, subject, id])
            for event in events { try Self.enqueue(event, db) }
            return .removed
        }
    }
}
