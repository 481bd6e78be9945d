import ArgumentParser
import Foundation
import Logging
import SignupDomain

/// Operator commands on the account store.
struct Accounts: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect stored accounts.",
        subcommands: [List.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List stored accounts (never their password hashes).")

        @Option(help: help("database", "SQLite database file or PostgreSQL URL."))
        var database = "data/livesignup.sqlite"

        enum Format: String, ExpressibleByArgument, CaseIterable {
            case table, json
        }

        @Option(help: "table (for people) or json (one array of accounts, each with its profile, for programs).")
        var format: Format = .table

        static let environmentOptions: [(name: String, kind: EnvironmentArguments.Kind)] = [("database", .option)]

        func run() throws {
            try AccountOptions.checkDatabase(database)
            guard AccountOptions.isURL(database) || FileManager.default.fileExists(atPath: database) else {
                throw ValidationError("No database at '\(database)'.")
            }
            let accounts = try AccountOptions.openStore(database, logger: Logger(label: "livesignup.accounts")).allAccounts()
            let formatter = ISO8601DateFormatter()
            if format == .json {
                print(Self.json(accounts, formatter: formatter))
                return
            }
            var lines = [["id", "username", "email", "created", "can sign in"]]
            for account in accounts {
                lines.append([String(account.id), account.username, account.email,
                              formatter.string(from: account.createdAt),
                              account.passwordHash == Account.unusablePasswordHash ? "no (reserved)" : "yes"])
            }
            let widths = lines[0].indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
            for line in lines {
                let cells = line.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                print(cells.joined(separator: "  ").trimmingCharacters(in: .whitespaces))
            }
            print("\(accounts.count) account\(accounts.count == 1 ? "" : "s")")
        }

        /// `[{"id":1,"username":…,"email":…,"created_at":…,"can_sign_in":true,"profile":{…}}]`,
        /// keys sorted; never a password hash.
        static func json(_ accounts: [Account], formatter: ISO8601DateFormatter) -> String {
            struct Entry: Encodable {
                let id: Int64
                let username: String
                let email: String
                let created_at: String
                let can_sign_in: Bool
                let profile: [String: ProfileValue]
            }
            let entries = accounts.map {
                Entry(id: $0.id, username: $0.username, email: $0.email, created_at: formatter.string(from: $0.createdAt),
                      can_sign_in: $0.passwordHash != Account.unusablePasswordHash, profile: $0.profile)
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
            return String(decoding: (try? encoder.encode(entries)) ?? Data("[]".utf8), as: UTF8.self)
        }
    }
}
