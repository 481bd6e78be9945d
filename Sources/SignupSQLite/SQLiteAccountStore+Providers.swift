import Foundation
import SignupDomain
import GRDB

// MARK: Provider identities (issue 45)

extension SQLiteAccountStore {
    static func insert(_ link: NewProviderLink, forAccount id: Int64, at date: Date, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO provider_links (issuer, subject, account_id, provider, email, linked_at) VALUES (?, ?, ?, ?, ?, ?)
            """, arguments: [link.issuer, link.subject, id, link.provider, link.email, date])
    }

    public func account(linkedTo issuer: String, subject: String) throws -> Account? {
        try read { db in
            try Self.fetchAccounts(db, where: "id = (SELECT account_id FROM provider_links WHERE issuer = ? AND subject = ?)",
                                   [issuer, subject]).first
        }
    }

    public func providerLinks(ofAccount id: Int64) throws -> [ProviderLink] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT account_id, provider, issuer, subject, email, linked_at FROM provider_links
                WHERE account_id = ? ORDER BY linked_at, provider
                """, arguments: [id]).map { row in
                ProviderLink(accountID: row["account_id"], provider: row["provider"], issuer: row["issuer"],
                             subject: row["subject"], email: row["email"], linkedAt: row["linked_at"])
            }
        }
    }

    public func linkProvider(_ link: NewProviderLink, toAccount id: Int64, at date: Date, events: [OutboxEvent]) throws {
        try write { db in
            if let owner = try Int64.fetchOne(db, sql: "SELECT account_id FROM provider_links WHERE issuer = ? AND subject = ?",
                                              arguments: [link.issuer, link.subject]) {
                guard owner == id else { throw ProviderLinkError.linkedElsewhere }
                return
            }
            try Self.insert(link, forAccount: id, at: date, db)
            for event in events { try Self.enqueue(event, db) }
        }
    }

    public func unlinkProvider(issuer: String, subject: String, fromAccount id: Int64,
                               events: [OutboxEvent]) throws -> WayInRemoval {
        try write { db -> WayInRemoval in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM provider_links WHERE issuer = ? AND subject = ? AND account_id = ?)",
                                    arguments: [issuer, subject, id]) == true else { return .notFound }
            // In the write transaction (SQLite's one writer): nothing is removed between the count and the delete.
            let otherLinks = try Int.fetchOne(db, sql: "SELECT count(*) FROM provider_links WHERE account_id = ?",
                                              arguments: [id]) ?? 0
            let passkeys = try Int.fetchOne(db, sql: "SELECT count(*) FROM passkeys WHERE user_id = ?", arguments: [id]) ?? 0
            let hasPassword = try Bool.fetchOne(db, sql: "SELECT password_hash != ? FROM users WHERE id = ?",
                                                arguments: [Account.unusablePasswordHash, id]) ?? false
            guard otherLinks > 1 || passkeys > 0 || hasPassword else { return .lastWayIn }
            try db.execute(sql: "DELETE FROM provider_links WHERE issuer = ? AND subject = ? AND account_id = ?",
                           arguments: [issuer, subject, id])
            for event in events { try Self.enqueue(event, db) }
            return .removed
        }
    }
}
