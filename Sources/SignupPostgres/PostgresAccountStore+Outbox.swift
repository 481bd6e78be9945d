import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
    // MARK: Outbox

    public func claimDueEvents(channel: OutboxChannel, at now: Date, limit: Int, lease: TimeInterval) throws -> [ClaimedEvent] {
        let logger = self.logger
        let leaseEnd = now.addingTimeInterval(lease)
        return try run("claim webhook events") { client in
            // SKIP LOCKED: instances claiming at once each get other events, none waits.
            try await client.withTransaction(logger: logger) { connection in
                var claimed: [ClaimedEvent] = []
                for try await (id, type, body, created, attempts) in try await connection.query("""
                    SELECT id, type, body, created_at, attempts FROM outbox
                    WHERE channel = \(channel.rawValue) AND state = 'pending' AND next_attempt_at <= \(now)
                    ORDER BY created_at, id LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                    """, logger: logger).decode((String, String, String, Date, Int).self) {
                    claimed.append(ClaimedEvent(event: OutboxEvent(id: id, type: type, body: body, createdAt: created, channel: channel),
                                                attempts: attempts))
                }
                for event in claimed {
                    try await connection.query("UPDATE outbox SET next_attempt_at = \(leaseEnd) WHERE id = \(event.event.id)",
                                               logger: logger)
                }
                return claimed
            }
        }
    }

    public func markDelivered(eventID: String, attempts: Int, at now: Date) throws {
        try run("record a delivered webhook") { client in
            try await client.query("""
                UPDATE outbox SET state = 'delivered', attempts = \(attempts), delivered_at = \(now), last_error = NULL,
                    body = CASE WHEN channel = 'mail' THEN '' ELSE body END
                WHERE id = \(eventID)
                """)
        }
    }

    public func scheduleRetry(eventID: String, attempts: Int, at next: Date, error: String) throws {
        try run("schedule a webhook retry") { client in
            try await client.query("""
                UPDATE outbox SET attempts = \(attempts), next_attempt_at = \(next), last_error = \(error) WHERE id = \(eventID)
                """)
        }
    }

    public func park(eventID: String, attempts: Int, error: String) throws {
        try run("park a webhook") { client in
            try await client.query("""
                UPDATE outbox SET state = 'parked', attempts = \(attempts), last_error = \(error) WHERE id = \(eventID)
                """)
        }
    }

    public func outboxStatus(channel: OutboxChannel) throws -> OutboxStatus {
        let name = channel.rawValue
        return try run("read the outbox") { client in
            var status = OutboxStatus(pending: 0, parked: 0, oldestPendingCreatedAt: nil)
            for try await (pending, parked, oldest) in try await client.query("""
                SELECT (SELECT COUNT(*) FROM outbox WHERE channel = \(name) AND state = 'pending'),
                       (SELECT COUNT(*) FROM outbox WHERE channel = \(name) AND state = 'parked'),
                       (SELECT MIN(created_at) FROM outbox WHERE channel = \(name) AND state = 'pending')
                """).decode((Int, Int, Date?).self) {
                status = OutboxStatus(pending: pending, parked: parked, oldestPendingCreatedAt: oldest)
            }
            return status
        }
    }

    public func removeDeliveredEvents(deliveredBefore date: Date) throws -> Int {
        try countRows("remove delivered webhooks", "DELETE FROM outbox WHERE state = 'delivered' AND delivered_at < \(date) RETURNING id")
    }

    static func enqueue(_ event: OutboxEvent, _ connection: PostgresConnection, _ logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO outbox (id, channel, type, body, created_at, next_attempt_at)
            VALUES (\(event.id), \(event.channel.rawValue), \(event.type), \(event.body), \(event.createdAt), \(event.createdAt))
            """, logger: logger)
    }
}
