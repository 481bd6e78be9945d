import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
    // MARK: Shared token buckets

    public func spendSharedTokens(bucket: String, key: String, cost: Double, rate: SharedBucketRate, at now: Date) throws -> Double {
        let logger = self.logger
        return try run("spend from a shared limit") { client in
            try await client.withTransaction(logger: logger) { connection in
                // Instances spend from one bucket one at a time, also before its row exists (a
                // row lock alone would let two first spends both see a full bucket).
                let lockName = bucket + " " + key
                try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(lockName)))", logger: logger)
                var tokens = rate.burst
                for try await (stored, updated) in try await connection.query("""
                    SELECT tokens, updated_at FROM shared_buckets WHERE bucket = \(bucket) AND key = \(key)
                    """, logger: logger).decode((Double, Date).self) {
                    tokens = rate.refilled(stored, updated: updated, now: now)
                }
                guard cost > 0, tokens >= cost else { return tokens }
                let left = tokens - cost
                let fullAt = rate.fullAt(left, now: now)
                try await connection.query("""
                    INSERT INTO shared_buckets (bucket, key, tokens, updated_at, full_at) VALUES (\(bucket), \(key), \(left), \(now), \(fullAt))
                    ON CONFLICT (bucket, key) DO UPDATE SET tokens = EXCLUDED.tokens, updated_at = EXCLUDED.updated_at,
                        full_at = EXCLUDED.full_at
                    """, logger: logger)
                return tokens
            }
        }
    }

    public func resetSharedTokens(bucket: String, key: String) throws {
        try run("reset a shared limit") { client in
            try await client.query("DELETE FROM shared_buckets WHERE bucket = \(bucket) AND key = \(key)")
        }
    }

    public func removeFullSharedBuckets(at now: Date) throws -> Int {
        try countRows("remove full shared limits", "DELETE FROM shared_buckets WHERE full_at <= \(now) RETURNING key")
    }
}
