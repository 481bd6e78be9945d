import ArgumentParser
import Foundation
import Identity
import Logging
import SignupDomain

/// Operator commands on the OpenID provider's signing keys (issue 56).
struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The keys LiveSignup signs its OpenID tokens with.",
        subcommands: [List.self, Rotate.self])

    /// The store's keys, as every instance reads them.
    static func signingKeys(_ database: String) throws -> SigningKeys {
        let store = try AccountOptions.openExistingStore(database, logger: Logger(label: "livesignup.keys"))
        return SigningKeys(store: store, tokenLifetime: SigningKeys.defaultTokenLifetime, now: { Date() })
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Each key: its id, when it was made, when it signs, and whether the key set publishes it.")

        @Option(help: help("database", "SQLite database file or PostgreSQL URL."))
        var database = "data/livesignup.sqlite"

        func run() throws {
            let keys = try Keys.signingKeys(database)
            let now = keys.now(), format = ISO8601DateFormatter()
            for algorithm in SigningKeys.algorithms {
                let ring = try keys.ring(algorithm)
                let published = Set(ring.published(at: now, tokenLifetime: keys.tokenLifetime).map(\.id))
                let signer = ring.signer(at: now)?.id
                for key in ring.keys {
                    let state = key.id == signer ? "signing" : key.signsFrom > now ? "published, signs later"
                        : published.contains(key.id) ? "published, retired" : "expired"
                    print("\(key.id)  \(key.algorithm)  made \(format.string(from: key.createdAt))  signs from \(format.string(from: key.signsFrom))  \(state)")
                }
            }
        }
    }

    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add the next key: published at once, signing after --publish-hours, so the key sets relying parties cached hold it before it signs; the old key stays published until what it signed has expired.")

        @Option(help: help("database", "SQLite database file or PostgreSQL URL."))
        var database = "data/livesignup.sqlite"

        @Option(help: "Hours between publishing the new key and its first signature (longer than any relying party caches the key set).")
        var publishHours = 24

        func validate() throws {
            guard (0...720).contains(publishHours) else { throw ValidationError("--publish-hours must be 0 to 720.") }
        }

        func run() throws {
            for key in try Keys.signingKeys(database).rotate(publishLead: TimeInterval(publishHours * 3600)) {
                print("Added key \(key.id) (\(key.algorithm)): published now, signing from \(ISO8601DateFormatter().string(from: key.signsFrom)).")
            }
        }
    }
}
