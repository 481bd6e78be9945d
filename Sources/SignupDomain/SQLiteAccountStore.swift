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
        // An account the server confirmed must survive a crash of the process or the machine:
        // in WAL mode, FULL syncs the log on every commit.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
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
        migrator.registerMigration("v2: one account per form session") { db in
            try db.alter(table: "users") { table in
                table.add(column: "form_token", .text)
            }
            try db.create(index: "users_form_token", on: "users", columns: ["form_token"], unique: true)
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

    public func createAccount(_ account: NewAccount) throws -> Account {
        do {
            return try database.write { db in
                try db.execute(
                    sql: """
                    INSERT INTO users (username, username_canonical, email, password_hash, form_token)
                    VALUES (?, ?, ?, ?, ?)
                    """,
                    arguments: [account.username, Username.canonical(account.username), account.email,
                                account.passwordHash, account.formToken])
                let id = db.lastInsertedRowID
                guard let stored = try Self.fetchAccounts(db, where: "id = ?", [id]).first else {
                    throw DatabaseError(message: "the new account could not be read back")
                }
                return stored
            }
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            // The message names the index that refused the row.
            if error.message?.contains("form_token") == true { throw AccountCreationError.formAlreadyUsed }
            throw AccountCreationError.usernameTaken
        }
    }

    public func account(named username: String) throws -> Account? {
        try database.read { db in
            try Self.fetchAccounts(db, where: "username_canonical = ?", [Username.canonical(username)]).first
        }
    }

    public func allAccounts() throws -> [Account] {
        try database.read { db in try Self.fetchAccounts(db, where: "1", []) }
    }

    private static func fetchAccounts(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> [Account] {
        try Row.fetchAll(
            db,
            sql: "SELECT id, username, email, password_hash, created_at FROM users WHERE \(condition) ORDER BY id",
            arguments: arguments
        ).map { row in
            Account(id: row["id"], username: row["username"], email: row["email"],
                    passwordHash: row["password_hash"], createdAt: row["created_at"])
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
