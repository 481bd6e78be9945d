import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
    // MARK: Passkeys

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
    static func insert(_ new: NewPasskey, forAccount id: Int64, _ connection: PostgresConnection,
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

    static func passkeys(_ rows: PostgresRowSequence) async throws -> [Passkey] {
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
}
