import Foundation
import SignupDomain
import GRDB

extension SQLiteAccountStore {
    // MARK: The sign-up funnel's counts (issue 59)

    public func addFunnelCounts(_ counts: [FunnelCount], period: Date) throws {
        guard !counts.isEmpty else { return }
        // One transaction per flush: a flush is all of it or none, and tried again whole.
        try write { db in
            let statement = try db.cachedStatement(sql: """
                INSERT INTO form_funnel (period, metric, detail, bucket, language, credential, javascript, value)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(period, metric, detail, bucket, language, credential, javascript)
                DO UPDATE SET value = value + excluded.value
                """)
            // The period written once: GRDB formats a date anew for every argument list it is in
            // (about 15,000 instructions, more than the row's upsert).
            let minute = period.databaseValue
            for count in counts {
                let series = count.series
                try statement.execute(arguments: [minute, series.metric.rawValue, series.detail, series.bucket, series.language,
                                                  series.credential, series.javascript, count.value])
            }
        }
    }

    public func funnelCounts(since: Date) throws -> [FunnelCount] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT metric, detail, bucket, language, credential, javascript, SUM(value) AS value FROM form_funnel
                WHERE period >= ? GROUP BY metric, detail, bucket, language, credential, javascript
                """, arguments: [since]).compactMap { row in
                // A name this build does not know (a newer instance's) is left out, not misread.
                guard let metric = FunnelMetric(rawValue: row["metric"]) else { return nil }
                return FunnelCount(FunnelSeries(metric: metric, detail: row["detail"], bucket: row["bucket"],
                                                language: row["language"], credential: row["credential"],
                                                javascript: row["javascript"]), row["value"])
            }
        }
    }

    public func removeFunnelCounts(before date: Date) throws -> Int {
        try removeRows("DELETE FROM form_funnel WHERE period < ?", [date])
    }
}
