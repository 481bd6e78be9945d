import ArgumentParser
import Foundation
import Logging
import SignupDomain

/// Operator commands on the account store.
struct Accounts: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect stored accounts, and start a recovery for one.",
        subcommands: [List.self, Recover.self])

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

    /// ASVS V6.4: an operator may start a recovery for a person who cannot (a lost mailbox,
    /// a support call), never set or see a password. The link works like a mailed one: once,
    /// for `--recovery-minutes`, and any recovery the account had before stops working.
    struct Recover: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a one-time link that lets the account's owner choose a new password (hand it over yourself).")

        @Option(help: help("database", "SQLite database file or PostgreSQL URL."))
        var database = "data/livesignup.sqlite"

        @Option(help: "The account's username.")
        var username: String

        @Option(help: help("public-origin", "The origin the site is served under (e.g. https://signup.example.com): the link's start."))
        var publicOrigin: String

        @Option(help: help("recovery-minutes", "How long the link works."))
        var recoveryMinutes = 15

        static let environmentOptions: [(name: String, kind: EnvironmentArguments.Kind)] = [
            ("database", .option), ("public-origin", .option), ("recovery-minutes", .option),
        ]

        func validate() throws {
            guard (5...24 * 60).contains(recoveryMinutes) else {
                throw ValidationError("--recovery-minutes must be 5 to 1440 (a day).")
            }
            guard let url = URL(string: publicOrigin), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                  url.host != nil, url.path.isEmpty || url.path == "/", url.query == nil else {
                throw ValidationError("--public-origin must be an origin like https://signup.example.com, not '\(publicOrigin)'.")
            }
        }

        func run() throws {
            try AccountOptions.checkDatabase(database)
            guard AccountOptions.isURL(database) || FileManager.default.fileExists(atPath: database) else {
                throw ValidationError("No database at '\(database)'.")
            }
            let store = try AccountOptions.openStore(database, logger: Logger(label: "livesignup.accounts"))
            guard let account = try store.account(named: username) else {
                throw ValidationError("No account is named '\(username)'.")
            }
            // The server's key for codes and links (made by whichever of them ran first).
            let secrets = VerificationSecrets(key: try store.secret(named: "verification-code-key",
                                                                    createdBy: VerificationSecrets.makeKey))
            let link = VerificationSecrets.makeLinkToken(), now = Date()
            try store.startRecovery(AccountRecovery(
                token: VerificationSecrets.makeLinkToken(), accountID: account.id,
                codeHash: VerificationSecrets.unmatchableHash(), linkHash: secrets.linkHash(link), language: "en",
                expiresAt: now.addingTimeInterval(TimeInterval(recoveryMinutes * 60)), createdAt: now), mail: nil)
            let origin = publicOrigin.hasSuffix("/") ? String(publicOrigin.dropLast()) : publicOrigin
            print("\(origin)/recover?link=\(link)")
            let note = "A new password can be chosen for \(account.username) with this link, once, for \(recoveryMinutes) "
                + "minutes. Hand it over only to its owner; any earlier recovery of the account stopped working.\n"
            FileHandle.standardError.write(Data(note.utf8))
        }
    }
}
