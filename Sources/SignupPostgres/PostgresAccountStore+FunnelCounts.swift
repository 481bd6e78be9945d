import Foundation
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
    // MARK: The sign-up funnel's counts (issue 59)

    public func addFunnelCounts(_ counts: [FunnelCount], period: Date) throws {
        guard !counts.isEmpty else { return }
        // One statement per flush, the rows as arrays: instances add to the same rows, and
        // ON CONFLICT makes each addition atomic without a lock of ours.
        let metrics = counts.map(\.series.metric.rawValue), details = counts.map(\.series.detail)
        let buckets = counts.map(\.series.bucket), languages = counts.map(\.series.language)
        let credentials = counts.map(\.series.credential), javascript = counts.map(\.series.javascript)
        let values = counts.map { Int64($0.value) }
        try run("add to the sign-up funnel") { client in
            try await client.query("""
                INSERT INTO form_funnel (period, metric, detail, bucket, language, credential, javascript, value)
                SELECT \(period), * FROM UNNEST(\(metrics)::text[], \(details)::text[], \(buckets)::text[], \(languages)::text[],
                    \(credentials)::text[], \(javascript)::boolean[], \(values)::bigint[])
                ON CONFLICT (period, metric, detail, bucket, language, credential, javascript)
                DO UPDATE SET value = form_funnel.value + EXCLUDED.value
                """)
        }
    }

    public func funnelCounts(since: Date) throws -> [FunnelCount] {
        try run("read the sign-up funnel") { client in
            var counts: [FunnelCount] = []
            let rows = try await client.query("""
                SELECT metric, detail, bucket, language, credential, javascript, SUM(value)::bigint FROM form_funnel
                WHERE period >= \(since) GROUP BY metric, detail, bucket, language, credential, javascript
                """)
            for try await (name, detail, bucket, language, credential, javascript, value)
                in rows.decode((String, String, String, String, String, Bool, Int64).self) {
                // A name this build does not know (a newer instance's) is left out, not misread.
                guard let metric = FunnelMetric(rawValue: name) else { continue }
                counts.append(FunnelCount(FunnelSeries(metric: metric, detail: detail, bucket: bucket, language: language,
                                                       credential: credential, javascript: javascript), Int(value)))
            }
            return counts
        }
    }

    public func removeFunnelCounts(before date: Date) throws -> Int {
        try countRows("remove old sign-up funnel counts", "DELETE FROM form_funnel WHERE period < \(date) RETURNING metric")
    }
}
