import ArgumentParser
import Foundation
import Logging
import SignupDomain

/// Operator commands on signed-in sessions.
struct Sessions: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage signed-in sessions.",
        subcommands: [Revoke.self])

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "End every signed-in session of an account, on every instance at once.")

        @Option(help: help("database", "SQLite database file or PostgreSQL URL."))
        var database = "data/livesignup.sqlite"

        @Option(help: "The account's username (any spelling of it: compared like sign-up compares names).")
        var username: String

        func run() throws {
            let store = try AccountOptions.openExistingStore(database, logger: Logger(label: "livesignup.sessions"))
            guard let account = try store.account(named: username) else {
                throw ValidationError("No account named '\(username)'.")
            }
            let ended = try store.endSignInSessions(username: account.username)
            print("Ended \(ended) signed-in session\(ended == 1 ? "" : "s") of \(account.username).")
        }
    }
}
