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

    static func open(path: String) throws -> DatabaseQueue {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try openExisting(path: path)
    }

    static func openExisting(path: String) throws -> DatabaseQueue {
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
        migrator.registerMigration("v21: signing keys") { db in
            // The OpenID provider's keys (issue 56): published from created_at, signing from signs_from.
            try db.create(table: "signing_keys") { table in
                table.primaryKey("id", .text)
                table.column("algorithm", .text).notNull()
                table.column("private_key", .text).notNull()
                table.column("created_at", .datetime).notNull()
                table.column("signs_from", .datetime).notNull()
            }
        }
        migrator.registerMigration("v22: how a session was proved") { db in
            // The ID token's amr (issue 56): RFC 8176 values, space-separated; older sessions: unknown.
            try db.alter(table: "sign_in_sessions") { table in
                table.add(column: "methods", .text).notNull().defaults(to: "")
            }
        }
        migrator.registerMigration("v23: the OpenID provider's grants") { db in
            // What a person granted an application in one sign-in; its codes and tokens go with it.
            try db.create(table: "oauth_grants") { table in
                table.primaryKey("id", .text)
                table.column("client_id", .text).notNull()
                table.column("account_id", .integer).notNull().references("users", onDelete: .cascade)
                table.column("scopes", .text).notNull()
                table.column("session_id", .text).notNull().indexed()
                table.column("auth_time", .datetime).notNull()
                table.column("methods", .text).notNull()
                table.column("created_at", .datetime).notNull()
                table.column("expires_at", .datetime).notNull().indexed()
            }
            try db.create(index: "oauth_grants_account_client", on: "oauth_grants", columns: ["account_id", "client_id"])
            // Spent codes stay until their grant goes: a second use must find them.
            try db.create(table: "oauth_codes") { table in
                table.primaryKey("code_hash", .text)
                table.column("grant_id", .text).notNull().indexed().references("oauth_grants", onDelete: .cascade)
                table.column("redirect_uri", .text).notNull()
                table.column("code_challenge", .text)
                table.column("nonce", .text)
                table.column("expires_at", .datetime).notNull()
                table.column("spent_at", .datetime)
            }
            try db.create(table: "oauth_tokens") { table in
                table.primaryKey("token_hash", .text)
                table.column("grant_id", .text).notNull().indexed().references("oauth_grants", onDelete: .cascade)
                table.column("kind", .text).notNull()
                table.column("expires_at", .datetime).notNull()
                table.column("spent_at", .datetime)
            }
            try db.create(table: "oauth_consents") { table in
                table.column("account_id", .integer).notNull().references("users", onDelete: .cascade)
                table.column("client_id", .text).notNull()
                table.primaryKey(["account_id", "client_id"])
                table.column("scopes", .text).notNull()
                table.column("granted_at", .datetime).notNull()
            }
        }
        migrator.registerMigration("v24: the sign-up funnel") { db in
            // Counts only (issue 59): one row per minute and series, every instance adding to it.
            try db.create(table: "form_funnel") { table in
                table.column("period", .datetime).notNull()
                table.column("metric", .text).notNull()
                table.column("detail", .text).notNull()
                table.column("bucket", .text).notNull()
                table.column("language", .text).notNull()
                table.column("credential", .text).notNull()
                table.column("javascript", .boolean).notNull()
                table.column("value", .integer).notNull()
                table.primaryKey(["period", "metric", "detail", "bucket", "language", "credential", "javascript"])
            }
            // Whether the form ran JavaScript, for the funnel's count when the address is proved.
            try db.alter(table: "pending_signups") { table in
                table.add(column: "javascript", .boolean).notNull().defaults(to: false)
            }
        }
        return migrator
    }

    // MARK: The database file under us

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        let database = try usableDatabase()
        return try database.read(body)
    }

    /// Writes only into the file at `path`, and acknowledges only what reached it: checked
    /// before (so nothing is written into a deleted file) and after the commit (so a file
    /// replaced during the write is not taken for success).
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        let database = try usableDatabase()
        let result = try database.write(body)
        try checkIdentity()
        return result
    }

    /// A write that removes rows (every sweep of what has expired) and how many it removed.
    func removeRows(_ sql: String, _ arguments: StatementArguments) throws -> Int {
        try write { db in
            try db.execute(sql: sql, arguments: arguments)
            return db.changesCount
        }
    }

    /// The open database if its file is still the one at `path`; otherwise a reopened one,
    /// or `StorageFault` while that is not possible.
    func usableDatabase() throws -> DatabaseQueue {
        try lock.withLock {
            if identity != nil, DatabaseFileIdentity(path: path) == identity { return database }
            return try recover()
        }
    }

    func checkIdentity() throws {
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
    func recover() throws -> DatabaseQueue {
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

    static func fetchAccounts(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> [Account] {
        try Row.fetchAll(
            db,
            sql: """
            SELECT id, username, email, password_hash, created_at, profile, email_verified_at, disabled_at FROM users
            WHERE \(condition) ORDER BY id
            """,
            arguments: arguments
        ).map(account)
    }

    static func account(_ row: Row) -> Account {
        Account(id: row["id"], username: row["username"], email: row["email"],
                passwordHash: row["password_hash"], createdAt: row["created_at"],
                profile: ProfileValue.profile(fromJSON: row["profile"]), emailVerifiedAt: row["email_verified_at"],
                disabledAt: row["disabled_at"])
    }
}
