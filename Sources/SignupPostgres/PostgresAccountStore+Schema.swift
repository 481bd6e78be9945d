import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
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
        // The OpenID provider's keys (issue 56): published from created_at, signing from signs_from.
        (20, "signing keys", [
            """
            CREATE TABLE signing_keys (
                id TEXT PRIMARY KEY,
                algorithm TEXT NOT NULL,
                private_key TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                signs_from TIMESTAMPTZ NOT NULL
            )
            """,
        ]),
        // How a session was proved (issue 56): the ID token's amr, RFC 8176 values space-separated.
        (21, "how a session was proved", [
            "ALTER TABLE sign_in_sessions ADD COLUMN methods TEXT NOT NULL DEFAULT ''",
        ]),
        // The OpenID provider's grants (issue 56): what a person granted an application in one
        // sign-in; its codes (spent ones kept until the grant goes, to catch a second use) and
        // tokens (hashes only) go with it.
        (22, "the OpenID provider's grants", [
            """
            CREATE TABLE oauth_grants (
                id TEXT PRIMARY KEY,
                client_id TEXT NOT NULL,
                account_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                scopes TEXT NOT NULL,
                session_id TEXT NOT NULL,
                auth_time TIMESTAMPTZ NOT NULL,
                methods TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL
            )
            """,
            "CREATE INDEX oauth_grants_account_client ON oauth_grants (account_id, client_id)",
            "CREATE INDEX oauth_grants_session ON oauth_grants (session_id)",
            "CREATE INDEX oauth_grants_expiry ON oauth_grants (expires_at)",
            """
            CREATE TABLE oauth_codes (
                code_hash TEXT PRIMARY KEY,
                grant_id TEXT NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
                redirect_uri TEXT NOT NULL,
                code_challenge TEXT,
                nonce TEXT,
                expires_at TIMESTAMPTZ NOT NULL,
                spent_at TIMESTAMPTZ
            )
            """,
            "CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id)",
            """
            CREATE TABLE oauth_tokens (
                token_hash TEXT PRIMARY KEY,
                grant_id TEXT NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
                kind TEXT NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                spent_at TIMESTAMPTZ
            )
            """,
            "CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id)",
            """
            CREATE TABLE oauth_consents (
                account_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                client_id TEXT NOT NULL,
                scopes TEXT NOT NULL,
                granted_at TIMESTAMPTZ NOT NULL,
                PRIMARY KEY (account_id, client_id)
            )
            """,
        ]),
        // The sign-up funnel (issue 59): counts only, one row per minute and series, every
        // instance adding to it; and whether a waiting sign-up's form ran JavaScript.
        (23, "the sign-up funnel", [
            """
            CREATE TABLE form_funnel (
                period TIMESTAMPTZ NOT NULL,
                metric TEXT NOT NULL,
                detail TEXT NOT NULL,
                bucket TEXT NOT NULL,
                language TEXT NOT NULL,
                credential TEXT NOT NULL,
                javascript BOOLEAN NOT NULL,
                value BIGINT NOT NULL,
                PRIMARY KEY (period, metric, detail, bucket, language, credential, javascript)
            )
            """,
            "ALTER TABLE pending_signups ADD COLUMN javascript BOOLEAN NOT NULL DEFAULT FALSE",
        ]),
    ]

    func migrate() throws {
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
}
