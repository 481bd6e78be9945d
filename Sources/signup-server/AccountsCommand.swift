import ArgumentParser
import Foundation
import Logging
import SignupDomain
import SignupServer
import WebAuthn

/// Operator commands on the account store.
struct Accounts: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect stored accounts; start a recovery for one; disable, enable or delete one; remove its passkeys.",
        subcommands: [List.self, Recover.self, Disable.self, Enable.self, Delete.self, Passkeys.self, SecondFactor.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List stored accounts (never their password hashes).")

        @Option(help: help("database", "SQLite database file or PostgreSQL URL."))
        var database = "data/livesignup.sqlite"

        @Option(help: "table (for people) or json (one array of accounts, each with its profile, for programs).")
        var format: ReportFormat = .table

        func run() throws {
            let accounts = try AccountOptions.openExistingStore(database, logger: Logger(label: "livesignup.accounts")).allAccounts()
            let formatter = ISO8601DateFormatter()
            if format == .json {
                print(Self.json(accounts, formatter: formatter))
                return
            }
            var lines = [["id", "username", "email", "created", "can sign in"]]
            for account in accounts {
                lines.append([String(account.id), account.username, account.email,
                              formatter.string(from: account.createdAt),
                              account.disabledAt != nil ? "no (disabled)"
                                  : account.passwordHash == Account.unusablePasswordHash ? "no password" : "yes"])
            }
            let widths = lines[0].indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
            for line in lines {
                let cells = line.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                print(cells.joined(separator: "  ").trimmingCharacters(in: .whitespaces))
            }
            print("\(accounts.count) account\(accounts.count == 1 ? "" : "s")")
        }

        /// `[{"id":1,"username":…,"email":…,"created_at":…,"can_sign_in":true,"profile":{…}}]`,
        /// keys sorted; never a password hash. `can_sign_in` says whether it has a password (as
        /// it always did); a disabled account also has `disabled_at`.
        static func json(_ accounts: [Account], formatter: ISO8601DateFormatter) -> String {
            struct Entry: Encodable {
                let id: Int64
                let username: String
                let email: String
                let created_at: String
                let can_sign_in: Bool
                let profile: [String: ProfileValue]
                let disabled_at: String?
            }
            let entries = accounts.map {
                Entry(id: $0.id, username: $0.username, email: $0.email, created_at: formatter.string(from: $0.createdAt),
                      can_sign_in: $0.passwordHash != Account.unusablePasswordHash, profile: $0.profile,
                      disabled_at: $0.disabledAt.map { formatter.string(from: $0) })
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
            let store = try AccountOptions.openExistingStore(database, logger: Logger(label: "livesignup.accounts"))
            guard let account = try store.account(named: username) else {
                throw ValidationError("No account is named '\(username)'.")
            }
            guard account.disabledAt == nil else {
                throw ValidationError("'\(account.username)' is disabled: enable it first (accounts enable).")
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

    /// What every command that changes one account shares: the store, the account by its
    /// name, and the audit line (a `notice` on standard error, with the account's id) every
    /// change writes. The webhook goes to the store's outbox in the change's transaction;
    /// a server started with `--webhook-url` delivers it.
    struct Target: ParsableArguments {
        @Option(help: help("database", "SQLite database file or PostgreSQL URL."))
        var database = "data/livesignup.sqlite"

        @Option(help: "The account's username.")
        var username: String

        func open() throws -> (store: any AccountStore, account: Account) {
            let store = try AccountOptions.openExistingStore(database, logger: Logger(label: "livesignup.accounts"))
            guard let account = try store.account(named: username) else {
                throw ValidationError("No account is named '\(username)'.")
            }
            return (store, account)
        }

        /// One structured line an operator's log collector keeps: who, what, which account.
        static func audit(_ event: String, _ message: String, _ account: Account, _ extra: [String: String] = [:]) {
            var logger = Logger(label: "livesignup.audit")
            logger.logLevel = .notice
            var metadata: Logger.Metadata = ["event": "\(event)", "account": "\(account.id)", "username": "\(account.username)",
                                             "by": "operator", "user": "\(ProcessInfo.processInfo.environment["USER"] ?? "?")"]
            for (key, value) in extra { metadata[key] = "\(value)" }
            logger.notice("\(message)", metadata: metadata)
        }
    }

    /// Nobody signs in to the account until it is enabled; every session and recovery of it
    /// ends at once (other instances within their 5 s cache); its data stays.
    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable an account: sign-in refused, every session ended, its data kept.")

        @OptionGroup var target: Target

        func run() throws {
            let (store, account) = try target.open()
            let now = Date()
            guard let ended = try store.setAccountDisabled(
                id: account.id, at: now, events: [.accountChange("account.disabled", account, at: now, by: .operator)]) else {
                print("\(account.username) was disabled already.")
                return
            }
            Target.audit("account_disabled", "Account disabled by the operator; its sessions ended", account, ["sessions_ended": String(ended)])
            print("Disabled \(account.username); \(ended) signed-in session\(ended == 1 ? "" : "s") ended.")
        }
    }

    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a disabled account again.")

        @OptionGroup var target: Target

        func run() throws {
            let (store, account) = try target.open()
            let now = Date()
            guard try store.setAccountDisabled(
                id: account.id, at: nil, events: [.accountChange("account.enabled", account, at: now, by: .operator)]) != nil else {
                print("\(account.username) was not disabled.")
                return
            }
            Target.audit("account_enabled", "Account enabled by the operator", account)
            print("Enabled \(account.username).")
        }
    }

    /// The account with its sessions and passkeys, in one transaction with `account.deleted`;
    /// its username stays reserved (`--deleted-username-days`).
    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete an account with its sessions and passkeys; its username stays reserved for a while.")

        @OptionGroup var target: Target

        @Option(help: help("deleted-username-days", "Days the username stays reserved (0: free at once)."))
        var deletedUsernameDays = Int(SignupApplication.Configuration.defaults.deletedUsernameReservation / 86_400)

        @Flag(help: "Required: says you mean it (there is no undo).")
        var yes = false

        func validate() throws {
            guard yes else { throw ValidationError("Deleting an account cannot be undone: add --yes to do it.") }
            guard (0...3650).contains(deletedUsernameDays) else {
                throw ValidationError("--deleted-username-days must be 0 to 3650 (ten years).")
            }
        }

        func run() throws {
            let (store, account) = try target.open()
            let now = Date()
            guard try store.deleteAccount(id: account.id, reservingUsernameUntil: now.addingTimeInterval(TimeInterval(deletedUsernameDays * 86_400)),
                                          events: [.accountChange("account.deleted", account, at: now, by: .operator)]) else {
                throw ValidationError("No account is named '\(target.username)' any more.")
            }
            Target.audit("account_deleted", "Account deleted by the operator", account, ["username_reserved_days": String(deletedUsernameDays)])
            print("Deleted \(account.username); the name stays reserved for \(deletedUsernameDays) day\(deletedUsernameDays == 1 ? "" : "s").")
        }
    }

    struct Passkeys: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List or remove an account's passkeys.", subcommands: [List.self, Remove.self])

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List an account's passkeys (never their keys).")

            @OptionGroup var target: Target

            func run() throws {
                let (store, account) = try target.open()
                let formatter = ISO8601DateFormatter()
                for passkey in try store.passkeys(ofAccount: account.id) {
                    print([Base64URL.encode(passkey.credentialID), passkey.name.isEmpty ? "-" : passkey.name,
                           formatter.string(from: passkey.createdAt),
                           passkey.lastUsedAt.map { formatter.string(from: $0) } ?? "never used",
                           passkey.isBackedUp ? "synced" : "device-bound"].joined(separator: "  "))
                }
            }
        }

        /// One passkey (`--id`, as `list` prints it) or all of them (`--all`); never the
        /// account's last way in (an account without a password keeps one).
        struct Remove: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove one of an account's passkeys, or all it can lose.")

            @OptionGroup var target: Target

            @Option(help: "The passkey's credential id, as `passkeys list` prints it.")
            var id: String?

            @Flag(help: "Every passkey the account can lose (all, if it has a password; else all but one).")
            var all = false

            func validate() throws {
                guard (id != nil) != all else { throw ValidationError("Name one passkey with --id, or --all.") }
                if let id, Base64URL.decode(id) == nil { throw ValidationError("--id '\(id)' is not a credential id (base64url).") }
            }

            func run() throws {
                let (store, account) = try target.open()
                let chosen = try store.passkeys(ofAccount: account.id).filter { id == nil || Base64URL.encode($0.credentialID) == id }
                guard !chosen.isEmpty else { throw ValidationError("\(account.username) has no such passkey.") }
                var removed = 0, kept = 0
                for passkey in chosen {
                    let now = Date()
                    switch try store.removePasskey(credentialID: passkey.credentialID, ofAccount: account.id,
                                                   events: [.accountChange("account.passkey_removed", account, at: now, by: .operator)]) {
                    case .removed:
                        removed += 1
                        Target.audit("passkey_removed", "Passkey removed by the operator", account, ["passkey": Base64URL.encode(passkey.credentialID)])
                    case .lastWayIn: kept += 1
                    case .notFound: break
                    }
                }
                print("Removed \(removed) passkey\(removed == 1 ? "" : "s") of \(account.username)"
                      + (kept > 0 ? "; kept its last way in (it has no password)." : "."))
                if id != nil, kept > 0 { throw ExitCode(1) }
            }
        }
    }

    /// For a person who lost both the app and the recovery codes: the operator, having
    /// checked who they are by other means, removes the factor; the account signs in with its
    /// password alone until its owner sets one up again.
    struct SecondFactor: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "second-factor", abstract: "Reset an account's second factor.", subcommands: [Reset.self])

        struct Reset: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Remove an account's second factor and its recovery codes (check who is asking first).")

            @OptionGroup var target: Target

            func run() throws {
                let (store, account) = try target.open()
                let now = Date()
                guard try store.secondFactor(ofAccount: account.id) != nil,
                      try store.removeSecondFactor(ofAccount: account.id, events: [
                          .accountChange("account.second_factor_removed", account, at: now, by: .operator),
                      ]) else {
                    print("\(account.username) has no second factor.")
                    return
                }
                Target.audit("second_factor_reset", "Second factor reset by the operator", account)
                print("Reset the second factor of \(account.username): it signs in with its password alone until one is set up again.")
            }
        }
    }
}
