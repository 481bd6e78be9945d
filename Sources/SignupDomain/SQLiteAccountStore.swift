import Foundation
import GRDB

/// Accounts in SQLite through GRDB: WAL mode, versioned migrations, one `users` table whose
/// canonical username is unique.
public final class SQLiteAccountStore: AccountStore {
    private let database: DatabasePool

    /// Opens (creating and migrating as needed) the database at `path`; its folder is created.
    public init(path: String) throws {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        database = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(database)
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
        return migrator
    }

    public func isUsernameTaken(_ username: String) throws -> Bool {
        let canonical = Username.canonical(username)
        return try database.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM users WHERE username_canonical = ?)",
                              arguments: [canonical]) ?? false
        }
    }

    public func reserveUsernames(_ usernames: [String]) throws {
        try database.write { db in
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
}
