import Foundation
import SignupDomain
import GRDB

extension SQLiteAccountStore {
    // MARK: Outbox

    static func enqueue(_ event: OutboxEvent, _ db: Database) throws {
        try db.execute(
            sql: "INSERT INTO outbox (id, channel, type, body, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [event.id, event.channel.rawValue, event.type, event.body, event.createdAt, event.createdAt])
    }

    public func claimDueEvents(channel: OutboxChannel, at now: Date, limit: Int, lease: TimeInterval) throws -> [ClaimedEvent] {
        // One write transaction: SQLite has one writer, so two instances never claim the same.
        try write { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT id, type, body, created_at, attempts FROM outbox
                WHERE channel = ? AND state = 'pending' AND next_attempt_at <= ? ORDER BY created_at, id LIMIT ?
                """, arguments: [channel.rawValue, now, limit])
            for row in rows {
                try db.execute(sql: "UPDATE outbox SET next_attempt_at = ? WHERE id = ?",
                               arguments: [now.addingTimeInterval(lease), row["id"] as String])
            }
            return rows.map { row in
                ClaimedEvent(event: OutboxEvent(id: row["id"], type: row["type"], body: row["body"], createdAt: row["created_at"],
                                                channel: channel),
                             attempts: row["attempts"])
            }
        }
    }

    public func markDelivered(eventID: String, attempts: Int, at now: Date) throws {
        try write { db in
            try db.execute(sql: """
                UPDATE outbox SET state = 'delivered', attempts = ?, delivered_at = ?, last_error = NULL,
                    body = CASE WHEN channel = 'mail' THEN '' ELSE body END
                WHERE id = ?
                """,
                           arguments: [attempts, now, eventID])
        }
    }

    public func scheduleRetry(eventID: String, attempts: Int, at next: Date, error: String) throws {
        try write { db in
            try db.execute(sql: "UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ?",
                           arguments: [attempts, next, error, eventID])
        }
    }

    public func park(eventID: String, attempts: Int, error: String) throws {
        try write { db in
            try db.execute(sql: "UPDATE outbox SET state = 'parked', attempts = ?, last_error = ? WHERE id = ?",
                           arguments: [attempts, error, eventID])
        }
    }

    public func outboxStatus(channel: OutboxChannel) throws -> OutboxStatus {
        try read { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT (SELECT COUNT(*) FROM outbox WHERE channel = ?1 AND state = 'pending') AS pending,
                       (SELECT COUNT(*) FROM outbox WHERE channel = ?1 AND state = 'parked') AS parked,
                       (SELECT MIN(created_at) FROM outbox WHERE channel = ?1 AND state = 'pending') AS oldest
                """, arguments: [channel.rawValue])
            return OutboxStatus(pending: row?["pending"] ?? 0, parked: row?["parked"] ?? 0, oldestPendingCreatedAt: row?["oldest"])
        }
    }

    public func removeDeliveredEvents(deliveredBefore date: Date) throws -> Int {
        try removeRows("DELETE FROM outbox WHERE state = 'delivered' AND delivered_at < ?", [date])
    }
}
