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
    let client: PostgresClient
    private let runner: Task<Void, Never>
    let answerTimeout: TimeInterval
    let logger: Logger

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

    // MARK: Statements every concern shares

    /// A statement that returns a row per row it changed (`DELETE … RETURNING`, every sweep of
    /// what has expired) and how many rows that was.
    func countRows(_ what: String, _ query: PostgresQuery) throws -> Int {
        try run(what) { client in
            var count = 0
            for try await _ in try await client.query(query) { count += 1 }
            return count
        }
    }


    /// Runs a write that may break a unique rule, and names the rule it broke as
    /// `AccountCreationError` (the constraint's name says which).
    @discardableResult
    func creating<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresClient) async throws -> T) throws -> T {
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

    // MARK: Running async work for synchronous callers

    /// Runs `body` against the pool and waits at most `answerTimeout` for it. Errors that are
    /// about reaching the database become `StorageFault`; the database's own answers (a
    /// unique violation, say) pass through as `PSQLError`.
    @discardableResult
    func run<T: Sendable>(_ what: String, timeout: TimeInterval? = nil,
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

    static func seconds(_ interval: TimeInterval) -> String {
        interval == interval.rounded() ? String(Int(interval)) : String(interval)
    }

    /// How many rows a statement returned (a DELETE … RETURNING's count).
    static func count(_ rows: PostgresRowSequence) async throws -> Int {
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }

    static func first<T: PostgresDecodable>(_ type: T.Type, _ rows: PostgresRowSequence) async throws -> T? {
        for try await value in rows.decode(T.self) { return value }
        return nil
    }

    static func accounts(_ rows: PostgresRowSequence) async throws -> [Account] {
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
