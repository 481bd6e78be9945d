import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

/// Accounts in PostgreSQL through postgres-nio's `PostgresClient` (its connection pool, with
/// a bound), for several instances sharing one database. The same table shape and the same
/// promises as `SQLiteAccountStore`: the canonical username (`Username.canonical`) is unique,
/// so is the form token, a commit is acknowledged only once PostgreSQL has made it durable
/// (its default `synchronous_commit = on`), and the schema is migrated on start.
///
/// `AccountStore` is synchronous (its callers are libmicrohttpd's and Dispatch's threads,
/// never Swift's cooperative pool); each call runs the async client in a task on
/// `DedicatedTaskExecutor.postgres` (not the global executor, whose threads those callers
/// may be occupying) and waits for it at most `answerTimeout`. A database that does not answer in time, or cannot be reached,
/// is a `StorageFault`: sign-ups get 503 and `/readyz` fails, and the pool connects again
/// by itself when the database is back.
public final class PostgresAccountStore: AccountStore, @unchecked Sendable {
    public let location: PostgresLocation
    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let answerTimeout: TimeInterval
    private let logger: Logger

    /// Connects (lazily, through the pool) and migrates the schema; throws if the database
    /// cannot be reached or migrated within `answerTimeout`.
    public init(location: PostgresLocation, maximumConnections: Int = 8, answerTimeout: TimeInterval = 5,
                logger: Logger = Logger(label: "livesignup.postgres")) throws {
        self.location = location
        self.answerTimeout = answerTimeout
        self.logger = logger
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username,
            password: location.password, database: location.database, tls: location.tls)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .milliseconds(Int64(min(answerTimeout, 10) * 1000))
        // The pool logs every failed connection attempt at info, several a second during an
        // outage; the store's own errors (and /readyz) already say the database is away.
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .warning)
        let client = PostgresClient(configuration: configuration, backgroundLogger: poolLogger)
        self.client = client
        runner = Task(executorPreference: DedicatedTaskExecutor.postgres) { await client.run() }
        try migrate()
    }

    deinit {
        runner.cancel()
    }

    // MARK: Schema

    /// Each step runs once, in order, in one transaction per start, under an advisory lock so
    /// instances starting together do not race each other through the same step.
    static let migrations: [(version: Int, name: String, sql: [String])] = [
        (1, "users", [
            """
            CREATE TABLE users (
                id BIGSERIAL PRIMARY KEY,
                username TEXT NOT NULL,
                username_canonical TEXT NOT NULL CONSTRAINT users_username_canonical UNIQUE,
                email TEXT NOT NULL,
                password_hash TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                form_token TEXT CONSTRAINT users_form_token UNIQUE
            )
            """,
        ]),
        (2, "server secrets", [
            "CREATE TABLE server_secrets (name TEXT PRIMARY KEY, value BYTEA NOT NULL)",
        ]),
        // The policy's stored fields, one JSON object per account (fields come and go with
        // the policy file; a column each would need a migration each time).
        (3, "account profiles", [
            "ALTER TABLE users ADD COLUMN profile JSONB NOT NULL DEFAULT '{}'::jsonb",
        ]),
        // Signed-in sessions, shared by every instance: only the SHA-256 of the cookie's id.
        (4, "signed-in sessions", [
            """
            CREATE TABLE sign_in_sessions (
                id_hash TEXT PRIMARY KEY,
                user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                created_at TIMESTAMPTZ NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                last_seen_at TIMESTAMPTZ NOT NULL
            )
            """,
            "CREATE INDEX sign_in_sessions_user ON sign_in_sessions (user_id)",
        ]),
        // Limits that must hold across instances (failed sign-ins per account).
        (5, "shared token buckets", [
            """
            CREATE TABLE shared_buckets (
                bucket TEXT NOT NULL,
                key TEXT NOT NULL,
                tokens DOUBLE PRECISION NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL,
                full_at TIMESTAMPTZ NOT NULL,
                PRIMARY KEY (bucket, key)
            )
            """,
        ]),
        // Webhook events, written in the account's own transaction, delivered at least once.
        (6, "webhook outbox", [
            """
            CREATE TABLE webhook_outbox (
                id TEXT PRIMARY KEY,
                type TEXT NOT NULL,
                body TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                state TEXT NOT NULL DEFAULT 'pending',
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at TIMESTAMPTZ NOT NULL,
                last_error TEXT,
                delivered_at TIMESTAMPTZ
            )
            """,
            "CREATE INDEX webhook_outbox_due ON webhook_outbox (state, next_attempt_at)",
        ]),
        // Mails go out the way webhooks do: one table, each row on its channel.
        (7, "one outbox, by channel", [
            "ALTER TABLE webhook_outbox RENAME TO outbox",
            "ALTER TABLE outbox ADD COLUMN channel TEXT NOT NULL DEFAULT 'webhook'",
            "DROP INDEX webhook_outbox_due",
            "CREATE INDEX outbox_due ON outbox (channel, state, next_attempt_at)",
        ]),
        // Only proved addresses are unique (accounts made without a proof keep NULL, so
        // existing duplicates do not stop the migration); sign-ups waiting for their proof.
        (8, "proved addresses and pending sign-ups", [
            "ALTER TABLE users ADD COLUMN email_canonical TEXT CONSTRAINT users_email_canonical UNIQUE",
            "ALTER TABLE users ADD COLUMN email_verified_at TIMESTAMPTZ",
            """
            CREATE TABLE pending_signups (
                form_token TEXT PRIMARY KEY,
                username TEXT NOT NULL,
                username_canonical TEXT NOT NULL CONSTRAINT pending_signups_username UNIQUE,
                email TEXT NOT NULL,
                password_hash TEXT NOT NULL,
                profile JSONB NOT NULL,
                language TEXT NOT NULL,
                return_to TEXT NOT NULL,
                code_hash TEXT NOT NULL,
                link_hash TEXT NOT NULL CONSTRAINT pending_signups_link_hash UNIQUE,
                wrong_tries INTEGER NOT NULL,
                codes_sent INTEGER NOT NULL,
                last_sent_at TIMESTAMPTZ NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                created_at TIMESTAMPTZ NOT NULL
            )
            """,
            "CREATE INDEX pending_signups_expiry ON pending_signups (expires_at)",
        ]),
        // Proof-of-work solutions are single use on every instance.
        (9, "spent proofs of work", [
            "CREATE TABLE spent_proofs (challenge TEXT PRIMARY KEY, expires_at TIMESTAMPTZ NOT NULL)",
            "CREATE INDEX spent_proofs_expiry ON spent_proofs (expires_at)",
        ]),
        // Passkeys with their accounts; each account's WebAuthn user handle (made on first use).
        (10, "passkeys", [
            "ALTER TABLE users ADD COLUMN user_handle BYTEA CONSTRAINT users_user_handle UNIQUE",
            """
            CREATE TABLE passkeys (
                credential_id BYTEA PRIMARY KEY,
                user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                public_key BYTEA NOT NULL,
                algorithm INTEGER NOT NULL,
                sign_count BIGINT NOT NULL,
                transports TEXT NOT NULL,
                backup_eligible BOOLEAN NOT NULL,
                backed_up BOOLEAN NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                last_used_at TIMESTAMPTZ
            )
            """,
            "CREATE INDEX passkeys_user ON passkeys (user_id)",
        ]),
        // A passkey made on a sign-up form waits with its pending sign-up (JSON, "" for none).
        (11, "passkeys made on sign-up forms", [
            "ALTER TABLE pending_signups ADD COLUMN passkey TEXT NOT NULL DEFAULT ''",
        ]),
        // Ways back into accounts; a stand-in for a name with no account has no account_id.
        (12, "account recoveries", [
            """
            CREATE TABLE account_recoveries (
                token TEXT PRIMARY KEY,
                account_id BIGINT REFERENCES users (id) ON DELETE CASCADE,
                code_hash TEXT NOT NULL,
                link_hash TEXT NOT NULL CONSTRAINT account_recoveries_link_hash UNIQUE,
                wrong_tries INTEGER NOT NULL,
                language TEXT NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                created_at TIMESTAMPTZ NOT NULL
            )
            """,
            "CREATE INDEX account_recoveries_account ON account_recoveries (account_id)",
            "CREATE INDEX account_recoveries_expiry ON account_recoveries (expires_at)",
        ]),
        // Sessions their owners can see: sessions from before have no device or network to
        // show, count as proved when they began, and each gets a random handle.
        (13, "sessions their owners can see", [
            "ALTER TABLE sign_in_sessions ADD COLUMN authenticated_at TIMESTAMPTZ",
            "ALTER TABLE sign_in_sessions ADD COLUMN device TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE sign_in_sessions ADD COLUMN network TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE sign_in_sessions ADD COLUMN public_id TEXT",
            """
            UPDATE sign_in_sessions
            SET authenticated_at = created_at, public_id = substr(md5(random()::text || id_hash), 1, 16)
            """,
            "CREATE UNIQUE INDEX sign_in_sessions_public_id ON sign_in_sessions (public_id)",
        ]),
        // Accounts their owners and operators change: passkey names, disabled accounts, and a
        // deleted account's name kept from new accounts for a while.
        (14, "accounts their owners and operators change", [
            "ALTER TABLE passkeys ADD COLUMN name TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE users ADD COLUMN disabled_at TIMESTAMPTZ",
            "CREATE TABLE retired_usernames (username_canonical TEXT PRIMARY KEY, until TIMESTAMPTZ NOT NULL)",
        ]),
        // Address changes: one waiting per account (the old address stays until it is proved),
        // and the old address's way back for a week.
        (15, "address changes", [
            """
            CREATE TABLE email_changes (
                account_id BIGINT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
                new_email TEXT NOT NULL,
                code_hash TEXT NOT NULL,
                wrong_tries INTEGER NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                created_at TIMESTAMPTZ NOT NULL
            )
            """,
            """
            CREATE TABLE email_undos (
                link_hash TEXT PRIMARY KEY,
                account_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                old_email TEXT NOT NULL,
                old_verified_at TIMESTAMPTZ,
                expires_at TIMESTAMPTZ NOT NULL
            )
            """,
            "CREATE INDEX email_undos_account ON email_undos (account_id)",
        ]),
        // Second factors: the sealed TOTP secret (on once a first code was right) and the
        // recovery codes' hashes.
        (16, "second factors", [
            """
            CREATE TABLE second_factors (
                account_id BIGINT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
                sealed_secret BYTEA NOT NULL,
                enabled_at TIMESTAMPTZ,
                last_step BIGINT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL
            )
            """,
            """
            CREATE TABLE second_factor_codes (
                account_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                code_hash TEXT NOT NULL,
                PRIMARY KEY (account_id, code_hash)
            )
            """,
        ]),
        // Provider identities (issue 45): who a provider says a person is, linked to one account.
        (17, "provider identities", [
            """
            CREATE TABLE provider_links (
                issuer TEXT NOT NULL,
                subject TEXT NOT NULL,
                account_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                provider TEXT NOT NULL,
                email TEXT NOT NULL,
                linked_at TIMESTAMPTZ NOT NULL,
                PRIMARY KEY (issuer, subject)
            )
            """,
            "CREATE INDEX provider_links_account ON provider_links (account_id)",
        ]),
        // Wrong second-factor codes in a row (issue 52), apart from the password's failures.
        (18, "wrong second-factor codes in a row", [
            "ALTER TABLE second_factors ADD COLUMN failed_codes INTEGER NOT NULL DEFAULT 0",
        ]),
        // What an undo takes back (issue 52): when the address changed, and the password then.
        (19, "what an undo takes back", [
            "ALTER TABLE email_undos ADD COLUMN changed_at TIMESTAMPTZ",
            "ALTER TABLE email_undos ADD COLUMN password_hash TEXT",
            "UPDATE email_undos SET changed_at = expires_at - interval '7 days' WHERE changed_at IS NULL",
        ]),
    ]

    private func migrate() throws {
        let logger = self.logger
        try run("migrate the schema") { client in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(7305917402)", logger: logger)
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                    """, logger: logger)
                var applied = Set<Int>()
                for try await version in try await connection.query("SELECT version FROM schema_migrations", logger: logger)
                    .decode(Int.self) {
                    applied.insert(version)
                }
                for migration in Self.migrations where !applied.contains(migration.version) {
                    for statement in migration.sql {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query(
                        "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                        logger: logger)
                    logger.info("Migrated the account store", metadata: ["version": "\(migration.version)"])
                }
            }
        }
    }

    // MARK: Reads

    public func isUsernameTaken(_ username: String, at now: Date) throws -> Bool {
        let canonical = Username.canonical(username)
        return try run("look up a username") { client in
            try await Self.first(Bool.self, client.query("""
                SELECT EXISTS(SELECT 1 FROM users WHERE username_canonical = \(canonical))
                    OR EXISTS(SELECT 1 FROM pending_signups WHERE username_canonical = \(canonical) AND expires_at > \(now))
                    OR EXISTS(SELECT 1 FROM retired_usernames WHERE username_canonical = \(canonical) AND until > \(now))
                """)) ?? false
        }
    }

    public func isFormTokenUsed(_ formToken: String) throws -> Bool {
        try run("look up a form token") { client in
            try await Self.first(Bool.self, client.query(
                "SELECT EXISTS(SELECT 1 FROM users WHERE form_token = \(formToken))")) ?? false
        }
    }

    public func account(named username: String) throws -> Account? {
        let canonical = Username.canonical(username)
        return try run("read an account") { client in
            try await Self.accounts(client.query("""
                SELECT id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at FROM users
                WHERE username_canonical = \(canonical)
                """)).first
        }
    }

    public func allAccounts() throws -> [Account] {
        try run("read the accounts") { client in
            try await Self.accounts(client.query(
                "SELECT id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at FROM users ORDER BY id"))
        }
    }

    public func checkReadiness() throws {
        // A probe must answer within its own timeout (often 1–2 s), so it waits less than a
        // sign-up would.
        _ = try run("answer a readiness check", timeout: min(answerTimeout, 2)) { client in
            try await Self.first(Int.self, client.query("SELECT 1"))
        }
    }

    // MARK: Writes

    public func createAccount(_ account: NewAccount) throws -> Account {
        let canonical = Username.canonical(account.username)
        let logger = self.logger
        do {
            return try run("store a new account") { client in
                // One transaction: the account and its outbox event, or neither.
                try await client.withTransaction(logger: logger) { connection in
                    let emailCanonical: String? = account.emailVerifiedAt.map { _ in EmailAddress.canonical(account.email) }
                    let rows = try await connection.query("""
                        INSERT INTO users (username, username_canonical, email, password_hash, form_token, profile,
                                           email_canonical, email_verified_at)
                        VALUES (\(account.username), \(canonical), \(account.email), \(account.passwordHash), \(account.formToken),
                                \(ProfileValue.json(account.profile))::jsonb, \(emailCanonical), \(account.emailVerifiedAt))
                        RETURNING id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at
                        """, logger: logger)
                    guard let stored = try await Self.accounts(rows).first else {
                        throw StorageFault("PostgreSQL stored the account but returned no row.")
                    }
                    if let passkey = account.passkey { try await Self.insert(passkey, forAccount: stored.id, connection, logger) }
                    if let link = account.providerLink {
                        try await Self.insert(link, forAccount: stored.id, at: stored.createdAt, connection, logger)
                    }
                    if account.announce {
                        try await Self.enqueue(OutboxEvent.accountCreated(stored, provider: account.providerLink?.provider), connection, logger)
                    }
                    return stored
                }
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            // A unique index refused the row; its name says which.
            if error.serverInfo?[.constraintName] == "users_form_token" { throw AccountCreationError.formAlreadyUsed }
            throw AccountCreationError.usernameTaken
        } catch let error as PostgresTransactionError {
            // What went wrong inside the transaction, said as the other calls say it.
            if let refused = error.closureError as? PSQLError, refused.serverInfo?[.sqlState] == "23505" {
                if refused.serverInfo?[.constraintName] == "users_form_token" { throw AccountCreationError.formAlreadyUsed }
                if refused.serverInfo?[.constraintName] == "passkeys_pkey" { throw PasskeyError.credentialExists }
                if refused.serverInfo?[.constraintName] == "provider_links_pkey" { throw ProviderLinkError.linkedElsewhere }
                if refused.serverInfo?[.constraintName] == "users_email_canonical" { throw AccountCreationError.emailTaken }
                throw AccountCreationError.usernameTaken
            }
            if let fault = error.closureError as? StorageFault { throw fault }
            throw StorageFault("PostgreSQL at \(location.displayName) could not store a new account: \(error)")
        }
    }

    public func reserveUsernames(_ usernames: [String]) throws {
        let logger = self.logger
        try run("reserve usernames") { client in
            try await client.withTransaction(logger: logger) { connection in
                for username in usernames {
                    let canonical = Username.canonical(username)
                    try await connection.query("""
                        INSERT INTO users (username, username_canonical, email, password_hash)
                        VALUES (\(username), \(canonical), '', '!') ON CONFLICT (username_canonical) DO NOTHING
                        """, logger: logger)
                }
            }
        }
    }

    public func secret(named name: String, createdBy make: () -> [UInt8]) throws -> [UInt8] {
        let candidate = make()
        return try run("read a server secret") { client in
            // Whoever inserts first wins; everyone then reads the same value.
            try await client.query("""
                INSERT INTO server_secrets (name, value) VALUES (\(name), \(Data(candidate))) ON CONFLICT (name) DO NOTHING
                """)
            let stored = try await Self.first(Data.self, client.query(
                "SELECT value FROM server_secrets WHERE name = \(name)"))
            return stored.map { [UInt8]($0) } ?? candidate
        }
    }

    // MARK: Signed-in sessions

    public func startSignInSession(_ session: NewSignInSession) throws {
        try run("start a signed-in session") { client in
            try await client.query("""
                INSERT INTO sign_in_sessions (id_hash, user_id, created_at, expires_at, last_seen_at, authenticated_at, device,
                    network, public_id)
                VALUES (\(session.idHash), \(session.accountID), \(session.createdAt), \(session.expiresAt), \(session.createdAt),
                    \(session.authenticatedAt), \(session.device), \(session.network), \(session.publicID))
                """)
        }
    }

    public func startSignInSession(_ session: NewSignInSession, keepingAtMost keep: Int) throws -> [String] {
        let logger = self.logger, others = max(0, keep - 1)
        return try run("start a signed-in session") { client in
            try await client.withTransaction(logger: logger) { connection -> [String] in
                try await connection.query("""
                    INSERT INTO sign_in_sessions (id_hash, user_id, created_at, expires_at, last_seen_at, authenticated_at, device,
                        network, public_id)
                    VALUES (\(session.idHash), \(session.accountID), \(session.createdAt), \(session.expiresAt), \(session.createdAt),
                        \(session.authenticatedAt), \(session.device), \(session.network), \(session.publicID))
                    """, logger: logger)
                // The least recently used go first; the new one always stays.
                var ended: [String] = []
                for try await hash in try await connection.query("""
                    DELETE FROM sign_in_sessions WHERE user_id = \(session.accountID) AND id_hash != \(session.idHash)
                        AND id_hash NOT IN (
                            SELECT id_hash FROM sign_in_sessions WHERE user_id = \(session.accountID) AND id_hash != \(session.idHash)
                            ORDER BY last_seen_at DESC, created_at DESC, id_hash LIMIT \(others))
                    RETURNING id_hash
                    """, logger: logger).decode(String.self) {
                    ended.append(hash)
                }
                return ended
            }
        }
    }

    public func signedInAccount(idHash: String, at now: Date, rules: SignInSessionRules) throws -> Account? {
        let idleSince = now.addingTimeInterval(-rules.idleTimeout)
        let touchBefore = now.addingTimeInterval(-rules.touchInterval)
        return try run("read a signed-in session") { client in
            // One round trip: the live session's account, its last use moved on only when the
            // written one is older than the touch interval.
            try await client.query("""
                UPDATE sign_in_sessions SET last_seen_at = \(now)
                WHERE id_hash = \(idHash) AND expires_at > \(now) AND last_seen_at > \(idleSince) AND last_seen_at < \(touchBefore)
                """)
            return try await Self.accounts(client.query("""
                SELECT users.id, username, email, password_hash, users.created_at, profile::text, email_verified_at, disabled_at
                FROM sign_in_sessions JOIN users ON users.id = sign_in_sessions.user_id
                WHERE id_hash = \(idHash) AND expires_at > \(now) AND last_seen_at > \(idleSince)
                """)).first
        }
    }

    public func endSignInSession(idHash: String) throws {
        try run("end a signed-in session") { client in
            try await client.query("DELETE FROM sign_in_sessions WHERE id_hash = \(idHash)")
        }
    }

    public func endSignInSessions(username: String) throws -> Int {
        let canonical = Username.canonical(username)
        return try run("end an account's signed-in sessions") { client in
            var ended = 0
            for try await _ in try await client.query("""
                DELETE FROM sign_in_sessions WHERE user_id IN (SELECT id FROM users WHERE username_canonical = \(canonical))
                RETURNING id_hash
                """).decode(String.self) {
                ended += 1
            }
            return ended
        }
    }

    public func signInSessions(ofAccount id: Int64, at now: Date, rules: SignInSessionRules) throws -> [SignInSessionSummary] {
        let idleSince = now.addingTimeInterval(-rules.idleTimeout)
        return try run("read an account's signed-in sessions") { client in
            var sessions: [SignInSessionSummary] = []
            for try await (publicID, idHash, created, lastSeen, authenticated, expires, device, network) in try await client.query("""
                SELECT public_id, id_hash, created_at, last_seen_at, authenticated_at, expires_at, device, network
                FROM sign_in_sessions WHERE user_id = \(id) AND expires_at > \(now) AND last_seen_at > \(idleSince)
                ORDER BY last_seen_at DESC, created_at DESC
                """).decode((String, String, Date, Date, Date, Date, String, String).self) {
                sessions.append(SignInSessionSummary(publicID: publicID, idHash: idHash, createdAt: created, lastSeenAt: lastSeen,
                                                     authenticatedAt: authenticated, expiresAt: expires, device: device,
                                                     network: network))
            }
            return sessions
        }
    }

    public func endSignInSession(publicID: String, ofAccount id: Int64) throws -> Bool {
        try run("end a signed-in session") { client in
            try await Self.first(String.self, client.query("""
                DELETE FROM sign_in_sessions WHERE public_id = \(publicID) AND user_id = \(id) RETURNING id_hash
                """)) != nil
        }
    }

    public func endSignInSessions(ofAccount id: Int64, keeping idHash: String?) throws -> Int {
        try run("end an account's other signed-in sessions") { client in
            var ended = 0
            for try await _ in try await client.query("""
                DELETE FROM sign_in_sessions WHERE user_id = \(id) AND id_hash IS DISTINCT FROM \(idHash) RETURNING id_hash
                """).decode(String.self) {
                ended += 1
            }
            return ended
        }
    }

    public func recordAuthentication(idHash: String, at date: Date) throws -> Bool {
        try run("record a fresh sign-in") { client in
            try await Self.first(String.self, client.query("""
                UPDATE sign_in_sessions SET authenticated_at = \(date) WHERE id_hash = \(idHash) RETURNING id_hash
                """)) != nil
        }
    }

    public func removeEndedSignInSessions(at now: Date, rules: SignInSessionRules) throws -> Int {
        let idleSince = now.addingTimeInterval(-rules.idleTimeout)
        return try run("remove ended signed-in sessions") { client in
            var removed = 0
            for try await _ in try await client.query("""
                DELETE FROM sign_in_sessions WHERE expires_at <= \(now) OR last_seen_at <= \(idleSince) RETURNING id_hash
                """).decode(String.self) {
                removed += 1
            }
            return removed
        }
    }

    // MARK: Shared token buckets

    public func spendSharedTokens(bucket: String, key: String, cost: Double, rate: SharedBucketRate, at now: Date) throws -> Double {
        let logger = self.logger
        return try run("spend from a shared limit") { client in
            try await client.withTransaction(logger: logger) { connection in
                // Instances spend from one bucket one at a time, also before its row exists (a
                // row lock alone would let two first spends both see a full bucket).
                let lockName = bucket + " " + key
                try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(lockName)))", logger: logger)
                var tokens = rate.burst
                for try await (stored, updated) in try await connection.query("""
                    SELECT tokens, updated_at FROM shared_buckets WHERE bucket = \(bucket) AND key = \(key)
                    """, logger: logger).decode((Double, Date).self) {
                    tokens = rate.refilled(stored, updated: updated, now: now)
                }
                guard cost > 0, tokens >= cost else { return tokens }
                let left = tokens - cost
                let fullAt = rate.fullAt(left, now: now)
                try await connection.query("""
                    INSERT INTO shared_buckets (bucket, key, tokens, updated_at, full_at) VALUES (\(bucket), \(key), \(left), \(now), \(fullAt))
                    ON CONFLICT (bucket, key) DO UPDATE SET tokens = EXCLUDED.tokens, updated_at = EXCLUDED.updated_at,
                        full_at = EXCLUDED.full_at
                    """, logger: logger)
                return tokens
            }
        }
    }

    public func resetSharedTokens(bucket: String, key: String) throws {
        try run("reset a shared limit") { client in
            try await client.query("DELETE FROM shared_buckets WHERE bucket = \(bucket) AND key = \(key)")
        }
    }

    public func removeFullSharedBuckets(at now: Date) throws -> Int {
        try run("remove full shared limits") { client in
            var removed = 0
            for try await _ in try await client.query(
                "DELETE FROM shared_buckets WHERE full_at <= \(now) RETURNING key").decode(String.self) {
                removed += 1
            }
            return removed
        }
    }

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
                        passkey)
                    VALUES (\(pending.formToken), \(pending.username), \(canonical), \(pending.email), \(pending.passwordHash),
                        \(ProfileValue.json(pending.profile))::jsonb, \(pending.language), \(pending.returnTo), \(pending.codeHash),
                        \(pending.linkHash), \(pending.wrongTries), \(pending.codesSent), \(pending.lastSentAt),
                        \(pending.expiresAt), \(pending.createdAt), \(NewPasskey.json(pending.passkey)))
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
        try run("remove expired pending sign-ups") { client in
            var removed = 0
            for try await _ in try await client.query(
                "DELETE FROM pending_signups WHERE expires_at <= \(now) RETURNING form_token").decode(String.self) {
                removed += 1
            }
            return removed
        }
    }

    public func userHandle(ofAccount id: Int64) throws -> [UInt8] {
        let fresh = Data((0..<32).map { _ in UInt8.random(in: .min ... .max) })
        return try run("make a user handle") { client in
            // Set once: a second caller keeps the first's handle (COALESCE), both read it back.
            guard let handle = try await Self.first(Data.self, client.query("""
                UPDATE users SET user_handle = COALESCE(user_handle, \(fresh)) WHERE id = \(id) RETURNING user_handle
                """)) else { throw PasskeyError.unknownAccount }
            return Array(handle)
        }
    }

    public func account(withUserHandle handle: [UInt8]) throws -> Account? {
        let handle = Data(handle)
        return try run("read an account by user handle") { client in
            try await Self.accounts(client.query("""
                SELECT id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at FROM users
                WHERE user_handle = \(handle)
                """)).first
        }
    }

    /// A sign-up's passkey, in the transaction that makes its account: the user handle it was
    /// made for becomes the account's.
    private static func insert(_ new: NewPasskey, forAccount id: Int64, _ connection: PostgresConnection,
                               _ logger: Logger) async throws {
        let passkey = new.passkey(accountID: id)
        let credential = Data(passkey.credentialID), key = Data(passkey.publicKey), handle = Data(new.userHandle)
        let transports = Passkey.joined(passkey.transports), count = Int64(passkey.signCount), algorithm = passkey.algorithm
        try await connection.query("UPDATE users SET user_handle = \(handle) WHERE id = \(id)", logger: logger)
        try await connection.query("""
            INSERT INTO passkeys (credential_id, user_id, public_key, algorithm, sign_count, transports,
                                  backup_eligible, backed_up, created_at, last_used_at, name)
            VALUES (\(credential), \(id), \(key), \(algorithm), \(count), \(transports),
                    \(passkey.isBackupEligible), \(passkey.isBackedUp), \(passkey.createdAt), \(passkey.lastUsedAt),
                    \(passkey.name))
            """, logger: logger)
    }

    public func addPasskey(_ passkey: Passkey, events: [OutboxEvent]) throws {
        let id = Data(passkey.credentialID), key = Data(passkey.publicKey), transports = Passkey.joined(passkey.transports)
        let count = Int64(passkey.signCount), algorithm = passkey.algorithm, name = passkey.name
        let logger = self.logger
        do {
            try run("add a passkey") { client in
                try await client.withTransaction(logger: logger) { connection in
                    try await connection.query("""
                        INSERT INTO passkeys (credential_id, user_id, public_key, algorithm, sign_count, transports,
                                              backup_eligible, backed_up, created_at, last_used_at, name)
                        VALUES (\(id), \(passkey.accountID), \(key), \(algorithm), \(count), \(transports),
                                \(passkey.isBackupEligible), \(passkey.isBackedUp), \(passkey.createdAt), \(passkey.lastUsedAt),
                                \(name))
                        """, logger: logger)
                    for event in events { try await Self.enqueue(event, connection, logger) }
                }
            }
        } catch let error as PostgresTransactionError {
            let refused = error.closureError as? PSQLError
            if refused?.serverInfo?[.sqlState] == "23505" { throw PasskeyError.credentialExists }
            if refused?.serverInfo?[.sqlState] == "23503" { throw PasskeyError.unknownAccount }
            throw StorageFault("PostgreSQL at \(location.displayName) could not add a passkey: \(error)")
        }
    }

    public func passkey(credentialID: [UInt8]) throws -> Passkey? {
        let id = Data(credentialID)
        return try run("read a passkey") { client in
            try await Self.passkeys(client.query("""
                SELECT credential_id, user_id, public_key, algorithm, sign_count, transports, backup_eligible, backed_up,
                       created_at, last_used_at, name FROM passkeys WHERE credential_id = \(id)
                """)).first
        }
    }

    public func passkeys(ofAccount id: Int64) throws -> [Passkey] {
        try run("read an account's passkeys") { client in
            try await Self.passkeys(client.query("""
                SELECT credential_id, user_id, public_key, algorithm, sign_count, transports, backup_eligible, backed_up,
                       created_at, last_used_at, name FROM passkeys WHERE user_id = \(id) ORDER BY created_at, credential_id
                """))
        }
    }

    public func recordPasskeyUse(credentialID: [UInt8], signCount: UInt32, isBackedUp: Bool, at date: Date) throws -> Bool {
        let id = Data(credentialID), count = Int64(signCount)
        return try run("record a passkey's use") { client in
            var updated = false
            for try await _ in try await client.query("""
                UPDATE passkeys SET sign_count = \(count), backed_up = \(isBackedUp), last_used_at = \(date)
                WHERE credential_id = \(id) AND (sign_count < \(count) OR (sign_count = 0 AND \(count) = 0))
                RETURNING user_id
                """).decode(Int64.self) {
                updated = true
            }
            return updated
        }
    }

    private static func passkeys(_ rows: PostgresRowSequence) async throws -> [Passkey] {
        var passkeys: [Passkey] = []
        for try await (id, account, key, algorithm, count, transports, eligible, backedUp, created, used, name)
            in rows.decode((Data, Int64, Data, Int, Int64, String, Bool, Bool, Date, Date?, String).self) {
            passkeys.append(Passkey(credentialID: Array(id), accountID: account, publicKey: Array(key), algorithm: algorithm,
                                    signCount: UInt32(clamping: count), transports: Passkey.split(transports),
                                    isBackupEligible: eligible, isBackedUp: backedUp, createdAt: created, lastUsedAt: used,
                                    name: name))
        }
        return passkeys
    }

    public func spendProof(_ challenge: String, until expiresAt: Date) throws -> Bool {
        try run("spend a proof of work") { client in
            var inserted = false
            for try await _ in try await client.query("""
                INSERT INTO spent_proofs (challenge, expires_at) VALUES (\(challenge), \(expiresAt))
                ON CONFLICT (challenge) DO NOTHING RETURNING challenge
                """).decode(String.self) {
                inserted = true
            }
            return inserted
        }
    }

    public func removeExpiredProofs(at now: Date) throws -> Int {
        try run("remove expired proofs of work") { client in
            var removed = 0
            for try await _ in try await client.query(
                "DELETE FROM spent_proofs WHERE expires_at <= \(now) RETURNING challenge").decode(String.self) {
                removed += 1
            }
            return removed
        }
    }

    public func isEmailTaken(_ email: String) throws -> Bool {
        let canonical = EmailAddress.canonical(email)
        return try run("look up an email address") { client in
            try await Self.first(Bool.self, client.query(
                "SELECT EXISTS(SELECT 1 FROM users WHERE email_canonical = \(canonical))")) ?? false
        }
    }

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

    // MARK: Changes to accounts

    public func changePassword(ofAccount id: Int64, from expected: String, to newHash: String, keeping idHash: String?,
                               events: [OutboxEvent]) throws -> Int? {
        let logger = self.logger
        return try run("change an account's password") { client in
            try await client.withTransaction(logger: logger) { connection -> Int? in
                guard try await Self.first(Int64.self, connection.query("""
                    UPDATE users SET password_hash = \(newHash) WHERE id = \(id) AND password_hash = \(expected) RETURNING id
                    """, logger: logger)) != nil else { return nil }
                var ended = 0
                for try await _ in try await connection.query("""
                    DELETE FROM sign_in_sessions WHERE user_id = \(id) AND id_hash IS DISTINCT FROM \(idHash) RETURNING id_hash
                    """, logger: logger).decode(String.self) {
                    ended += 1
                }
                // A recovery still open would replace the password just chosen.
                try await connection.query("DELETE FROM account_recoveries WHERE account_id = \(id)", logger: logger)
                for event in events { try await Self.enqueue(event, connection, logger) }
                return ended
            }
        }
    }

    public func renamePasskey(credentialID: [UInt8], ofAccount id: Int64, to name: String) throws -> Bool {
        let credential = Data(credentialID)
        return try run("rename a passkey") { client in
            try await Self.first(Int64.self, client.query("""
                UPDATE passkeys SET name = \(name) WHERE credential_id = \(credential) AND user_id = \(id) RETURNING user_id
                """)) != nil
        }
    }

    public func removePasskey(credentialID: [UInt8], ofAccount id: Int64, events: [OutboxEvent]) throws -> WayInRemoval {
        let credential = Data(credentialID), logger = self.logger, unusable = Account.unusablePasswordHash
        return try run("remove a passkey") { client in
            try await client.withTransaction(logger: logger) { connection -> WayInRemoval in
                // The account's row locked first: two removals at once are one after the
                // other, and the second counts what the first left.
                guard let hasPassword = try await Self.first(Bool.self, connection.query(
                    "SELECT password_hash <> \(unusable) FROM users WHERE id = \(id) FOR UPDATE", logger: logger)) else {
                    return .notFound
                }
                guard try await Self.first(Int64.self, connection.query(
                    "SELECT user_id FROM passkeys WHERE credential_id = \(credential) AND user_id = \(id)", logger: logger)) != nil
                else { return .notFound }
                let others = try await Self.first(Int64.self, connection.query(
                    "SELECT count(*) FROM passkeys WHERE user_id = \(id) AND credential_id <> \(credential)", logger: logger)) ?? 0
                let links = try await Self.first(Int64.self, connection.query(
                    "SELECT count(*) FROM provider_links WHERE account_id = \(id)", logger: logger)) ?? 0
                guard others > 0 || hasPassword || links > 0 else { return .lastWayIn }
                try await connection.query("DELETE FROM passkeys WHERE credential_id = \(credential) AND user_id = \(id)",
                                           logger: logger)
                for event in events { try await Self.enqueue(event, connection, logger) }
                return .removed
            }
        }
    }

    public func deleteAccount(id: Int64, reservingUsernameUntil until: Date, events: [OutboxEvent]) throws -> Bool {
        let logger = self.logger
        return try run("delete an account") { client in
            try await client.withTransaction(logger: logger) { connection -> Bool in
                // Sessions, passkeys and recoveries go with it (ON DELETE CASCADE).
                guard let canonical = try await Self.first(String.self, connection.query(
                    "DELETE FROM users WHERE id = \(id) RETURNING username_canonical", logger: logger)) else { return false }
                try await connection.query("""
                    INSERT INTO retired_usernames (username_canonical, until) VALUES (\(canonical), \(until))
                    ON CONFLICT (username_canonical) DO UPDATE SET until = EXCLUDED.until
                    """, logger: logger)
                for event in events { try await Self.enqueue(event, connection, logger) }
                return true
            }
        }
    }

    public func setAccountDisabled(id: Int64, at date: Date?, events: [OutboxEvent]) throws -> Int? {
        let logger = self.logger, disabling = date != nil
        return try run(disabling ? "disable an account" : "enable an account") { client in
            try await client.withTransaction(logger: logger) { connection -> Int? in
                guard try await Self.first(Int64.self, connection.query("""
                    UPDATE users SET disabled_at = \(date) WHERE id = \(id) AND (disabled_at IS NULL) = \(disabling) RETURNING id
                    """, logger: logger)) != nil else { return nil }
                var ended = 0
                if disabling {
                    for try await _ in try await connection.query(
                        "DELETE FROM sign_in_sessions WHERE user_id = \(id) RETURNING id_hash", logger: logger).decode(String.self) {
                        ended += 1
                    }
                    try await connection.query("DELETE FROM account_recoveries WHERE account_id = \(id)", logger: logger)
                }
                for event in events { try await Self.enqueue(event, connection, logger) }
                return ended
            }
        }
    }

    public func removeEndedUsernameReservations(at now: Date) throws -> Int {
        try run("remove ended username reservations") { client in
            var removed = 0
            for try await _ in try await client.query(
                "DELETE FROM retired_usernames WHERE until <= \(now) RETURNING username_canonical").decode(String.self) {
                removed += 1
            }
            return removed
        }
    }

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
        try run("remove expired address changes") { client in
            var removed = 0
            for try await _ in try await client.query(
                "DELETE FROM email_changes WHERE expires_at <= \(now) RETURNING account_id").decode(Int64.self) {
                removed += 1
            }
            for try await _ in try await client.query(
                "DELETE FROM email_undos WHERE expires_at <= \(now) RETURNING account_id").decode(Int64.self) {
                removed += 1
            }
            return removed
        }
    }

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

    public func removeExpiredRecoveries(at now: Date) throws -> Int {
        try run("remove expired account recoveries") { client in
            var removed = 0
            for try await _ in try await client.query(
                "DELETE FROM account_recoveries WHERE expires_at <= \(now) RETURNING token").decode(String.self) {
                removed += 1
            }
            return removed
        }
    }

    public func account(withProvedEmail email: String) throws -> Account? {
        let canonical = EmailAddress.canonical(email)
        return try run("read an account") { client in
            try await Self.accounts(client.query("""
                SELECT id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at FROM users
                WHERE email_canonical = \(canonical)
                """)).first
        }
    }

    public func account(id: Int64) throws -> Account? {
        try run("read an account") { client in
            try await Self.accounts(client.query("""
                SELECT id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at FROM users
                WHERE id = \(id)
                """)).first
        }
    }

    private static let recoveryColumns = "token, account_id, code_hash, link_hash, wrong_tries, language, expires_at, created_at"

    private static func recovery(_ rows: PostgresRowSequence) async throws -> AccountRecovery? {
        for try await (token, account, codeHash, linkHash, tries, language, expires, created)
            in rows.decode((String, Int64?, String, String, Int, String, Date, Date).self) {
            return AccountRecovery(token: token, accountID: account, codeHash: codeHash, linkHash: linkHash, wrongTries: tries,
                                   language: language, expiresAt: expires, createdAt: created)
        }
        return nil
    }

    private static let pendingColumns = """
        form_token, username, email, password_hash, profile::text, language, return_to, code_hash, link_hash, \
        wrong_tries, codes_sent, last_sent_at, expires_at, created_at, passkey
        """

    private static func pending(_ rows: PostgresRowSequence) async throws -> PendingSignup? {
        for try await (token, username, email, hash, profile, language, returnTo, codeHash, linkHash, tries, sent, lastSent, expires, created, passkey)
            in rows.decode((String, String, String, String, String, String, String, String, String, Int, Int, Date, Date, Date, String).self) {
            return PendingSignup(formToken: token, username: username, email: email, passwordHash: hash,
                                 profile: ProfileValue.profile(fromJSON: profile), language: language, returnTo: returnTo,
                                 codeHash: codeHash, linkHash: linkHash, wrongTries: tries, codesSent: sent,
                                 lastSentAt: lastSent, expiresAt: expires, createdAt: created,
                                 passkey: try NewPasskey.fromJSON(passkey))
        }
        return nil
    }

    /// Runs a write that may break a unique rule, and names the rule it broke as
    /// `AccountCreationError` (the constraint's name says which).
    @discardableResult
    private func creating<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresClient) async throws -> T) throws -> T {
        func refusal(_ error: PSQLError) -> (any Error)? {
            guard error.serverInfo?[.sqlState] == "23505" else { return nil }
            switch error.serverInfo?[.constraintName] {
            case "users_form_token"?: return AccountCreationError.formAlreadyUsed
            case "users_email_canonical"?: return AccountCreationError.emailTaken
            case "passkeys_pkey"?: return PasskeyError.credentialExists
            default: return AccountCreationError.usernameTaken
            }
        }
        do {
            return try run(what, body)
        } catch let error as PSQLError {
            if let refused = refusal(error) { throw refused }
            throw error
        } catch let error as PostgresTransactionError {
            if let refused = error.closureError as? AccountCreationError { throw refused }
            if let refused = (error.closureError as? PSQLError).flatMap(refusal) { throw refused }
            if let fault = error.closureError as? StorageFault { throw fault }
            throw StorageFault("PostgreSQL at \(location.displayName) could not \(what): \(error)")
        }
    }

    private static func enqueue(_ event: OutboxEvent, _ connection: PostgresConnection, _ logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO outbox (id, channel, type, body, created_at, next_attempt_at)
            VALUES (\(event.id), \(event.channel.rawValue), \(event.type), \(event.body), \(event.createdAt), \(event.createdAt))
            """, logger: logger)
    }

    // MARK: Outbox

    public func claimDueEvents(channel: OutboxChannel, at now: Date, limit: Int, lease: TimeInterval) throws -> [ClaimedEvent] {
        let logger = self.logger
        let leaseEnd = now.addingTimeInterval(lease)
        return try run("claim webhook events") { client in
            // SKIP LOCKED: instances claiming at once each get other events, none waits.
            try await client.withTransaction(logger: logger) { connection in
                var claimed: [ClaimedEvent] = []
                for try await (id, type, body, created, attempts) in try await connection.query("""
                    SELECT id, type, body, created_at, attempts FROM outbox
                    WHERE channel = \(channel.rawValue) AND state = 'pending' AND next_attempt_at <= \(now)
                    ORDER BY created_at, id LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                    """, logger: logger).decode((String, String, String, Date, Int).self) {
                    claimed.append(ClaimedEvent(event: OutboxEvent(id: id, type: type, body: body, createdAt: created, channel: channel),
                                                attempts: attempts))
                }
                for event in claimed {
                    try await connection.query("UPDATE outbox SET next_attempt_at = \(leaseEnd) WHERE id = \(event.event.id)",
                                               logger: logger)
                }
                return claimed
            }
        }
    }

    public func markDelivered(eventID: String, attempts: Int, at now: Date) throws {
        try run("record a delivered webhook") { client in
            try await client.query("""
                UPDATE outbox SET state = 'delivered', attempts = \(attempts), delivered_at = \(now), last_error = NULL,
                    body = CASE WHEN channel = 'mail' THEN '' ELSE body END
                WHERE id = \(eventID)
                """)
        }
    }

    public func scheduleRetry(eventID: String, attempts: Int, at next: Date, error: String) throws {
        try run("schedule a webhook retry") { client in
            try await client.query("""
                UPDATE outbox SET attempts = \(attempts), next_attempt_at = \(next), last_error = \(error) WHERE id = \(eventID)
                """)
        }
    }

    public func park(eventID: String, attempts: Int, error: String) throws {
        try run("park a webhook") { client in
            try await client.query("""
                UPDATE outbox SET state = 'parked', attempts = \(attempts), last_error = \(error) WHERE id = \(eventID)
                """)
        }
    }

    public func outboxStatus(channel: OutboxChannel) throws -> OutboxStatus {
        let name = channel.rawValue
        return try run("read the outbox") { client in
            var status = OutboxStatus(pending: 0, parked: 0, oldestPendingCreatedAt: nil)
            for try await (pending, parked, oldest) in try await client.query("""
                SELECT (SELECT COUNT(*) FROM outbox WHERE channel = \(name) AND state = 'pending'),
                       (SELECT COUNT(*) FROM outbox WHERE channel = \(name) AND state = 'parked'),
                       (SELECT MIN(created_at) FROM outbox WHERE channel = \(name) AND state = 'pending')
                """).decode((Int, Int, Date?).self) {
                status = OutboxStatus(pending: pending, parked: parked, oldestPendingCreatedAt: oldest)
            }
            return status
        }
    }

    public func removeDeliveredEvents(deliveredBefore date: Date) throws -> Int {
        try run("remove delivered webhooks") { client in
            var removed = 0
            for try await _ in try await client.query(
                "DELETE FROM outbox WHERE state = 'delivered' AND delivered_at < \(date) RETURNING id").decode(String.self) {
                removed += 1
            }
            return removed
        }
    }

    // MARK: Running async work for synchronous callers

    /// Runs `body` against the pool and waits at most `answerTimeout` for it. Errors that are
    /// about reaching the database become `StorageFault`; the database's own answers (a
    /// unique violation, say) pass through as `PSQLError`.
    @discardableResult
    private func run<T: Sendable>(_ what: String, timeout: TimeInterval? = nil,
                                  _ body: @escaping @Sendable (PostgresClient) async throws -> T) throws -> T {
        let timeout = timeout ?? answerTimeout
        let outcome = Outcome<T>()
        let client = self.client
        let task = Task(executorPreference: DedicatedTaskExecutor.postgres) {
            do {
                outcome.finish(.success(try await body(client)))
            } catch {
                outcome.finish(.failure(error))
            }
        }
        guard let result = outcome.wait(timeout: timeout) else {
            task.cancel()
            throw StorageFault("PostgreSQL at \(location.displayName) did not answer within \(Self.seconds(timeout)) s (\(what)).")
        }
        switch result {
        case .success(let value):
            return value
        case .failure(let error as PSQLError) where error.code == .server:
            if error.serverInfo?[.sqlState] == "23505" { throw error }
            let message = error.serverInfo?[.message] ?? "no message"
            let state = error.serverInfo?[.sqlState] ?? "?"
            throw StorageFault("PostgreSQL at \(location.displayName) refused to \(what): \(message) (SQLSTATE \(state)).")
        case .failure(let error as PSQLError):
            throw StorageFault("PostgreSQL at \(location.displayName) cannot be reached to \(what) (\(error.code)).")
        case .failure(let error):
            throw error
        }
    }

    private static func seconds(_ interval: TimeInterval) -> String {
        interval == interval.rounded() ? String(Int(interval)) : String(interval)
    }

    /// How many rows a statement returned (a DELETE … RETURNING's count).
    private static func count(_ rows: PostgresRowSequence) async throws -> Int {
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }

    private static func first<T: PostgresDecodable>(_ type: T.Type, _ rows: PostgresRowSequence) async throws -> T? {
        for try await value in rows.decode(T.self) { return value }
        return nil
    }

    private static func accounts(_ rows: PostgresRowSequence) async throws -> [Account] {
        var accounts: [Account] = []
        for try await (id, username, email, hash, created, profile, verified, disabled)
            in rows.decode((Int64, String, String, String, Date, String, Date?, Date?).self) {
            accounts.append(Account(id: id, username: username, email: email, passwordHash: hash, createdAt: created,
                                    profile: ProfileValue.profile(fromJSON: profile), emailVerifiedAt: verified,
                                    disabledAt: disabled))
        }
        return accounts
    }
}

/// One result handed from a task to the thread waiting for it.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<T, any Error>?

    func finish(_ result: Result<T, any Error>) {
        condition.withLock {
            self.result = result
            condition.signal()
        }
    }

    func wait(timeout: TimeInterval) -> Result<T, any Error>? {
        let deadline = Date().addingTimeInterval(timeout)
        return condition.withLock {
            while result == nil, condition.wait(until: deadline) {}
            return result
        }
    }
}

// MARK: Provider identities (issue 45)

extension PostgresAccountStore {
    fileprivate static func insert(_ link: NewProviderLink, forAccount id: Int64, at date: Date, _ connection: PostgresConnection,
                                   _ logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO provider_links (issuer, subject, account_id, provider, email, linked_at)
            VALUES (\(link.issuer), \(link.subject), \(id), \(link.provider), \(link.email), \(date))
            """, logger: logger)
    }

    public func account(linkedTo issuer: String, subject: String) throws -> Account? {
        try run("read a linked account") { client in
            try await Self.accounts(client.query("""
                SELECT id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at FROM users
                WHERE id = (SELECT account_id FROM provider_links WHERE issuer = \(issuer) AND subject = \(subject))
                """)).first
        }
    }

    public func providerLinks(ofAccount id: Int64) throws -> [ProviderLink] {
        try run("read an account's provider links") { client in
            var links: [ProviderLink] = []
            for try await (account, provider, issuer, subject, email, linked) in try await client.query("""
                SELECT account_id, provider, issuer, subject, email, linked_at FROM provider_links
                WHERE account_id = \(id) ORDER BY linked_at, provider
                """).decode((Int64, String, String, String, String, Date).self) {
                links.append(ProviderLink(accountID: account, provider: provider, issuer: issuer, subject: subject, email: email,
                                          linkedAt: linked))
            }
            return links
        }
    }

    public func linkProvider(_ link: NewProviderLink, toAccount id: Int64, at date: Date, events: [OutboxEvent]) throws {
        let logger = self.logger
        let outcome: Bool = try run("link a provider identity") { client in
            try await client.withTransaction(logger: logger) { connection -> Bool in
                // Inserted unless the identity is linked already; then whose it is decides.
                if try await Self.first(Int64.self, connection.query("""
                    INSERT INTO provider_links (issuer, subject, account_id, provider, email, linked_at)
                    VALUES (\(link.issuer), \(link.subject), \(id), \(link.provider), \(link.email), \(date))
                    ON CONFLICT (issuer, subject) DO NOTHING RETURNING account_id
                    """, logger: logger)) != nil {
                    for event in events { try await Self.enqueue(event, connection, logger) }
                    return true
                }
                let owner = try await Self.first(Int64.self, connection.query(
                    "SELECT account_id FROM provider_links WHERE issuer = \(link.issuer) AND subject = \(link.subject)",
                    logger: logger))
                return owner == id
            }
        }
        guard outcome else { throw ProviderLinkError.linkedElsewhere }
    }

    public func unlinkProvider(issuer: String, subject: String, fromAccount id: Int64,
                               events: [OutboxEvent]) throws -> WayInRemoval {
        let logger = self.logger, unusable = Account.unusablePasswordHash
        return try run("unlink a provider identity") { client in
            try await client.withTransaction(logger: logger) { connection -> WayInRemoval in
                // The account's row locked first, as for a passkey's removal: two removals at
                // once are one after the other, and the second counts what the first left.
                guard let hasPassword = try await Self.first(Bool.self, connection.query(
                    "SELECT password_hash <> \(unusable) FROM users WHERE id = \(id) FOR UPDATE", logger: logger)) else {
                    return .notFound
                }
                guard try await Self.first(Int64.self, connection.query("""
                    SELECT account_id FROM provider_links WHERE issuer = \(issuer) AND subject = \(subject) AND account_id = \(id)
                    """, logger: logger)) != nil else { return .notFound }
                let links = try await Self.first(Int64.self, connection.query(
                    "SELECT count(*) FROM provider_links WHERE account_id = \(id)", logger: logger)) ?? 0
                let passkeys = try await Self.first(Int64.self, connection.query(
                    "SELECT count(*) FROM passkeys WHERE user_id = \(id)", logger: logger)) ?? 0
                guard links > 1 || passkeys > 0 || hasPassword else { return .lastWayIn }
                try await connection.query(
                    "DELETE FROM provider_links WHERE issuer = \(issuer) AND subject = \(subject) AND account_id = \(id)",
                    logger: logger)
                for event in events { try await Self.enqueue(event, connection, logger) }
                return .removed
            }
        }
    }
}
