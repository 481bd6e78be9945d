import ArgumentParser
import Foundation
import Logging
import OutsideDNS
import SignupDomain
import SignupLookups
import SignupSQLite
import SignupPostgres
import SignupServer

/// The account store, the policy and how passwords are hashed.
struct AccountOptions: ParsableArguments {
    @Option(help: help("database"))
    var database = "data/livesignup.sqlite"

    @Option(help: help("database-connections"))
    var databaseConnections = 8

    @Option(help: help("database-wait"))
    var databaseWait = 30

    @Option(help: help("policy"))
    var policy = Policy.presetNames[0]

    @Option(help: help("breached-passwords"))
    var breachedPasswords: String?

    @Option(help: help("breached-passwords-api"))
    var breachedPasswordsApi: String?

    @Option(help: help("breached-passwords-timeout-ms"))
    var breachedPasswordsTimeoutMs = 2000

    @Flag(help: help("email-dns-check"))
    var emailDnsCheck = false

    @Option(help: help("dns-server"))
    var dnsServer: [String] = []

    @Option(help: help("email-dns-timeout-ms"))
    var emailDnsTimeoutMs = 1500

    @Option(help: help("second-factor"))
    var secondFactor: String?

    @Flag(help: help("seed-demo"))
    var seedDemo = false

    @Option(help: help("availability-debounce-ms"))
    var availabilityDebounceMs: Int?

    @Option(help: help("argon2-preset"))
    var argon2Preset = Argon2Preset.interactive.rawValue

    @Option(help: help("max-concurrent-hashes"))
    var maxConcurrentHashes = max(1, ProcessInfo.processInfo.activeProcessorCount)

    @Flag(help: help("pseudo-locale"))
    var pseudoLocale = false

    enum Argon2Preset: String, CaseIterable {
        case interactive
        case moderate
        case owaspMinimum = "owasp-minimum"

        var hasher: Argon2idPasswordHasher {
            switch self {
            case .interactive: return Argon2idPasswordHasher(opsLimit: 2, memLimitBytes: 64 * 1024 * 1024)
            case .moderate: return Argon2idPasswordHasher(opsLimit: 3, memLimitBytes: 256 * 1024 * 1024)
            case .owaspMinimum: return .owaspMinimum
            }
        }
    }

    func validate() throws {
        if let secondFactor, SecondFactorRule(rawValue: secondFactor) == nil {
            throw ValidationError("--second-factor must be off, optional or required, not '\(secondFactor)'.")
        }
        let settings = try ConfigurationSources.inlinePolicy() ?? Self.loadPolicy(policy)
        // Each application's secret (issue 56), so `config check` says what the start would.
        for client in settings.clients {
            let secret = try client.secretVariable.flatMap { try ConfigurationSources.secret($0) }
            if let problem = client.problem(withSecret: secret) { throw ValidationError(problem) }
        }
        _ = try breachLookup()
        try validateDNSCheck()
        guard Argon2Preset(rawValue: argon2Preset) != nil else {
            throw ValidationError("Unknown --argon2-preset '\(argon2Preset)'. Choose one of: \(Argon2Preset.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        guard (availabilityDebounceMs ?? 0) >= 0 else { throw ValidationError("--availability-debounce-ms must be ≥ 0.") }
        guard maxConcurrentHashes >= 1 else { throw ValidationError("--max-concurrent-hashes must be at least 1.") }
        guard (1...1000).contains(databaseConnections) else { throw ValidationError("--database-connections must be 1 to 1000.") }
        guard (0...3600).contains(databaseWait) else { throw ValidationError("--database-wait must be 0 to 3600 seconds.") }
        try Self.checkDatabase(database)
    }

    /// A PostgreSQL URL must parse; anything else is a SQLite path.
    static func checkDatabase(_ database: String) throws {
        guard PostgresLocation.isURL(database) else { return }
        do throws(PostgresLocationError) {
            _ = try PostgresLocation(url: database)
        } catch {
            throw ValidationError("--database: \(error.description)")
        }
    }

    static func isURL(_ database: String) -> Bool { PostgresLocation.isURL(database) }

    /// The store `database` names: PostgreSQL for a postgres:// URL, SQLite for a path.
    ///
    /// PostgreSQL may still be starting when the server does (a container or a machine booting
    /// together), so the first connection is retried for up to `wait` seconds, with a warning
    /// per attempt, instead of exiting at once into a restart loop.
    /// The store an operator's command works on: one that exists already (a command never
    /// creates an empty database by a mistyped path), its URL checked first.
    static func openExistingStore(_ database: String, logger: Logger) throws -> any AccountStore {
        try checkDatabase(database)
        guard isURL(database) || FileManager.default.fileExists(atPath: database) else {
            throw ValidationError("No database at '\(database)'.")
        }
        return try openStore(database, logger: logger)
    }

    static func openStore(_ database: String, connections: Int = 8, wait: Int = 0, logger: Logger) throws -> any AccountStore {
        guard PostgresLocation.isURL(database) else { return try SQLiteAccountStore(path: database) }
        let location = try PostgresLocation(url: database)
        let deadline = Date().addingTimeInterval(TimeInterval(wait))
        var pause: TimeInterval = 0.25
        var attempt = 1
        while true {
            do {
                let store = try PostgresAccountStore(location: location, maximumConnections: connections, logger: logger)
                if attempt > 1 { logger.notice("The database answered", metadata: ["attempts": "\(attempt)"]) }
                return store
            } catch {
                let left = deadline.timeIntervalSinceNow
                guard left > 0 else { throw error }
                pause = min(pause * 2, 5, left)
                logger.warning("Waiting for the database", metadata: [
                    "error": "\(error)", "attempt": "\(attempt)", "retry_in_seconds": "\(pause)",
                    "gives_up_in_seconds": "\(Int(left.rounded(.up)))",
                ])
                Thread.sleep(forTimeInterval: pause)
                attempt += 1
            }
        }
    }

    /// The breach source the flags name, if any; refused with a reason when unusable.
    func breachLookup() throws -> (any BreachedPasswordLookup)? {
        switch (breachedPasswords, breachedPasswordsApi) {
        case (nil, nil):
            return nil
        case (_?, _?):
            throw ValidationError("Give --breached-passwords or --breached-passwords-api, not both.")
        case (let path?, nil):
            do {
                return try PwnedPasswordsFile(path: path)
            } catch {
                throw ValidationError("--breached-passwords: \(error)")
            }
        case (nil, let address?):
            guard let url = URL(string: address), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                throw ValidationError("--breached-passwords-api must be an http(s) URL, like https://api.pwnedpasswords.com (got '\(address)').")
            }
            guard (100...30_000).contains(breachedPasswordsTimeoutMs) else {
                throw ValidationError("--breached-passwords-timeout-ms must be 100 to 30000.")
            }
            return PwnedPasswordsRangeAPI(baseURL: url, timeout: Double(breachedPasswordsTimeoutMs) / 1000)
        }
    }

    /// Refuses DNS settings that cannot work, before anything starts.
    func validateDNSCheck() throws {
        guard emailDnsCheck else {
            if !dnsServer.isEmpty { throw ValidationError("--dns-server is for --email-dns-check; give that too.") }
            return
        }
        for server in dnsServer {
            if let problem = DNSResolverSettings.problem(with: server) {
                throw ValidationError("--dns-server '\(server)': \(problem).")
            }
        }
        guard (100...30_000).contains(emailDnsTimeoutMs) else {
            throw ValidationError("--email-dns-timeout-ms must be 100 to 30000.")
        }
    }

    /// The DNS check the flags ask for, if any; refused with a reason when unusable.
    func mailDomainChecker() throws -> MailDomainChecker? {
        try validateDNSCheck()
        guard emailDnsCheck else { return nil }
        do {
            let resolver = try CAresMailDomainResolver(settings: DNSResolverSettings(
                servers: dnsServer, timeoutMilliseconds: emailDnsTimeoutMs))
            return MailDomainChecker(resolver: resolver)
        } catch {
            throw ValidationError("--email-dns-check: \(error)")
        }
    }

    /// A preset by name, else a policy file; a bad file is refused with its line and reason.
    static func loadPolicy(_ nameOrPath: String) throws -> Policy {
        if let preset = Policy.named(nameOrPath) { return preset }
        guard FileManager.default.fileExists(atPath: nameOrPath) else {
            throw ValidationError("Unknown policy '\(nameOrPath)'. Choose one of: \(Policy.presetNames.joined(separator: ", ")). Or give a policy file's path (there is no file at '\(nameOrPath)').")
        }
        do {
            return try PolicyFile.load(path: nameOrPath)
        } catch {
            throw ValidationError("The policy file is refused: \(error)")
        }
    }

    func apply(to configuration: inout SignupApplication.Configuration) throws {
        let settings = try ConfigurationSources.inlinePolicy() ?? Self.loadPolicy(policy)
        // The flag wins over the policy file, which wins over the built-in 300 ms.
        let debounce = availabilityDebounceMs ?? settings.availabilityDebounceMilliseconds ?? 300
        configuration.availabilityDebounce = .milliseconds(debounce)
        configuration.breachedPasswords = try breachLookup().map {
            // Fail-open: when the source cannot answer, the built-in common-password list does.
            BreachedPasswordChecker.onWorkerThreads(lookup: $0, fallback: .builtIn)
        }
        configuration.mailDomains = try mailDomainChecker()
        // The rules have the outside requirements the services above answer.
        configuration.policy = FormPolicy(settings, lookups: Lookups(
            breachedPasswords: configuration.breachedPasswords, mailDomains: configuration.mailDomains).kinds)
        configuration.passwordHasher = (Argon2Preset(rawValue: argon2Preset) ?? .interactive).hasher
        configuration.maximumConcurrentHashes = maxConcurrentHashes
    }
}

/// How an operator's command prints what it read: a table for people, JSON for programs.
enum ReportFormat: String, ExpressibleByArgument, CaseIterable {
    case table, json
}
