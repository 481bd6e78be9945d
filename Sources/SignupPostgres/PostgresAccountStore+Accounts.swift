import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
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
        try countRows("remove ended username reservations", "DELETE FROM retired_usernames WHERE until <= \(now) RETURNING username_canonical")
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
}
