import Foundation
import SignupDomain
import GRDB

extension SQLiteAccountStore {
    // MARK: Shared token buckets

    public func spendSharedTokens(bucket: String, key: String, cost: Double, rate: SharedBucketRate, at now: Date) throws -> Double {
        let read = { (db: Database) throws -> Double in
            guard let row = try Row.fetchOne(db, sql: "SELECT tokens, updated_at FROM shared_buckets WHERE bucket = ? AND key = ?",
                                             arguments: [bucket, key]) else { return rate.burst }
            return rate.refilled(row["tokens"], updated: row["updated_at"], now: now)
        }
        guard cost > 0 else { return try self.read(read) }
        // One transaction: another instance's spend waits for it (SQLite has one writer).
        return try write { db in
            let tokens = try read(db)
            guard tokens >= cost else { return tokens }
            let left = tokens - cost
            try db.execute(
                sql: """
                INSERT INTO shared_buckets (bucket, key, tokens, updated_at, full_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(bucket, key) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at,
                    full_at = excluded.full_at
                """,
                arguments: [bucket, key, left, now, rate.fullAt(left, now: now)])
            return tokens
        }
    }

    public func resetSharedTokens(bucket: String, key: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM shared_buckets WHERE bucket = ? AND key = ?", arguments: [bucket, key])
        }
    }

    public func removeFullSharedBuckets(at now: Date) throws -> Int {
        try removeRows("DELETE FROM shared_buckets WHERE full_at <= ?", [now])
    }
}
