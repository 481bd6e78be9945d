import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

// MARK: Provider identities (issue 45)

extension PostgresAccountStore {
    static func insert(_ link: NewProviderLink, forAccount id: Int64, at date: Date, _ connection: PostgresConnection,
                                   _ logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO provider_links (issuer, subject, account_id, provider, email, linked_at)
            VALUES (\(link.issuer), \(link.subject), \(id), \(link.provider), \(link.email), \(date))
            """, logger: logger)
    }

    public func account(linkedTo issuer: String, subject: String) throws -> Account? {
        try run("read a linked account") { client in
            try await Self.accounts(client.query("""
                SELECT id, username, email, password_hash, created_at, profile::text, email_verified_at, disabled_at FROM users
                WHERE id = (SELECT account_id FROM provider_links WHERE issuer = \(issuer) AND subject = \(subject))
                """)).first
        }
    }

    public func providerLinks(ofAccount id: Int64) throws -> [ProviderLink] {
        try run("read an account's provider links") { client in
            var links: [ProviderLink] = []
            for try await (account, provider, issuer, subject, email, linked) in try await client.query("""
                SELECT account_id, provider, issuer, subject, email, linked_at FROM provider_links
                WHERE account_id = \(id) ORDER BY linked_at, provider
                """).decode((Int64, String, String, String, String, Date).self) {
                links.append(ProviderLink(accountID: account, provider: provider, issuer: issuer, subject: subject, email: email,
                                          linkedAt: linked))
            }
            return links
        }
    }

    public func linkProvider(_ link: NewProviderLink, toAccount id: Int64, at date: Date, events: [OutboxEvent]) throws {
        let logger = self.logger
        let outcome: Bool = try run("link a provider identity") { client in
            try await client.withTransaction(logger: logger) { connection -> Bool in
                // Inserted unless the identity is linked already; then whose it is decides.
                if try await Self.first(Int64.self, connection.query("""
                    INSERT INTO provider_links (issuer, subject, account_id, provider, email, linked_at)
                    VALUES (\(link.issuer), \(link.subject), \(id), \(link.provider), \(link.email), \(date))
                    ON CONFLICT (issuer, subject) DO NOTHING RETURNING account_id
                    """, logger: logger)) != nil {
                    for event in events { try await Self.enqueue(event, connection, logger) }
                    return true
                }
                let owner = try await Self.first(Int64.self, connection.query(
                    "SELECT account_id FROM provider_links WHERE issuer = \(link.issuer) AND subject = \(link.subject)",
                    logger: logger))
                return owner == id
            }
        }
        guard outcome else { throw ProviderLinkError.linkedElsewhere }
    }

    public func unlinkProvider(issuer: String, subject: String, fromAccount id: Int64,
                               events: [OutboxEvent]) throws -> WayInRemoval {
        let logger = self.logger, unusable = Account.unusablePasswordHash
        return try run("unlink a provider identity") { client in
            try await client.withTransaction(logger: logger) { connection -> WayInRemoval in
                // The account's row locked first, as for a passkey's removal: two removals at
                // once are one after the other, and the second counts what the first left.
                guard let hasPassword = try await Self.first(Bool.self, connection.query(
                    "SELECT password_hash <> \(unusable) FROM users WHERE id = \(id) FOR UPDATE", logger: logger)) else {
                    return .notFound
                }
                guard try await Self.first(Int64.self, connection.query("""
                    SELECT account_id FROM provider_links WHERE issuer = \(issuer) AND subject = \(subject) AND account_id = \(id)
                    """, logger: logger)) != nil else { return .notFound }
                let links = try await Self.first(Int64.self, connection.query(
                    "SELECT count(*) FROM provider_links WHERE account_id = \(id)", logger: logger)) ?? 0
                let passkeys = try await Self.first(Int64.self, connection.query(
                    "SELECT count(*) FROM passkeys WHERE user_id = \(id)", logger: logger)) ?? 0
                guard links > 1 || passkeys > 0 || hasPassword else { return .lastWayIn }
                try await connection.query(
                    "DELETE FROM provider_links WHERE issuer = \(issuer) AND subject = \(subject) AND account_id = \(id)",
                    logger: logger)
                for event in events { try await Self.enqueue(event, connection, logger) }
                return .removed
            }
        }
    }
}
