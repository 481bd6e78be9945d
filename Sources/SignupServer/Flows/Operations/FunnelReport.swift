import Foundation
import SignupDomain

/// The sign-up funnel as an operator without Grafana reads it (`signup-server funnel`): the
/// counts every instance added to the store since a moment, summed (issue 59).
public struct FunnelReport: Sendable {
    /// A group's forms: how many started, completed, were abandoned.
    public struct Share: Sendable, Equatable, Encodable {
        public var started = 0
        public var completed = 0
        public var abandoned = 0
    }

    /// A histogram's summary: how many observations, their mean, and the upper bounds of the
    /// buckets holding the median and the 90th percentile (nil past the last bound).
    public struct Times: Sendable, Equatable, Encodable {
        public var forms = 0
        public var meanSeconds: Double?
        public var medianAtMostSeconds: Double?
        public var p90AtMostSeconds: Double?

        enum CodingKeys: String, CodingKey {
            case forms
            case meanSeconds = "mean_seconds"
            case medianAtMostSeconds = "median_at_most_seconds"
            case p90AtMostSeconds = "p90_at_most_seconds"
        }
    }

    public let since: Date
    /// `started`, `first_edits`, `completed`, `abandoned`, every one present.
    public private(set) var totals: [String: Int] = [:]
    /// By step, `entered` and `finished`.
    public private(set) var steps: [String: [String: Int]] = [:]
    /// Refused posts by reason.
    public private(set) var refused: [String: Int] = [:]
    /// Requirements unmet on abandoned forms that had an edit: what stopped people.
    public private(set) var abandonedUnmet: [String: Int] = [:]
    /// By `javascript` (`yes`, `no`), `credential` and `language`.
    public private(set) var by: [String: [String: Share]] = [:]
    public private(set) var requirementsMet: [String: Times] = [:]
    public private(set) var completion = Times()

    /// The measures `totals` holds, by their names.
    private static let totalled: [FunnelMetric] = [.started, .firstEdits, .completed, .abandoned]

    public init(_ counts: [FunnelCount], since: Date) {
        self.since = since
        for metric in Self.totalled { totals[metric.rawValue] = 0 }
        // A histogram's cells by bucket: each requirement's, and the completion's.
        var metCells: [String: [String: Int]] = [:], completionCells: [String: Int] = [:]
        for count in counts {
            let series = count.series, value = count.value
            if Self.totalled.contains(series.metric) { totals[series.metric.rawValue, default: 0] += value }
            // Each form's end (and start) by the group it falls in.
            for (group, key) in [("javascript", series.javascript ? "yes" : "no"), ("credential", series.credential),
                                 ("language", series.language)] {
                switch series.metric {
                case .started: by[group, default: [:]][key, default: Share()].started += value
                case .completed: by[group, default: [:]][key, default: Share()].completed += value
                case .abandoned: by[group, default: [:]][key, default: Share()].abandoned += value
                default: break
                }
            }
            switch series.metric {
            case .submitsRefused: refused[series.detail, default: 0] += value
            case .stepsEntered: steps[series.detail, default: [:]]["entered", default: 0] += value
            case .stepsFinished: steps[series.detail, default: [:]]["finished", default: 0] += value
            case .abandonedUnmet: abandonedUnmet[series.detail, default: 0] += value
            case .requirementMet: metCells[series.detail, default: [:]][series.bucket, default: 0] += value
            case .completionSeconds: completionCells[series.bucket, default: 0] += value
            case .started, .firstEdits, .completed, .abandoned: break
            }
        }
        requirementsMet = metCells.mapValues { Self.times($0, bounds: FunnelMetric.requirementMet.bounds!) }
        completion = Self.times(completionCells, bounds: FunnelMetric.completionSeconds.bounds!)
    }

    private static func times(_ cells: [String: Int], bounds: [Double]) -> Times {
        let counts = (bounds.map(Optional.some) + [nil]).map { cells[FunnelSeries.bucketName($0)] ?? 0 }
        let total = counts.reduce(0, +)
        var times = Times(forms: total)
        guard total > 0 else { return times }
        times.meanSeconds = Double(cells[FunnelSeries.sumBucket] ?? 0) / 1000 / Double(total)
        func atMost(_ fraction: Double) -> Double? {
            var cumulative = 0
            for (index, count) in counts.enumerated() {
                cumulative += count
                if Double(cumulative) >= fraction * Double(total) { return index < bounds.count ? bounds[index] : nil }
            }
            return nil
        }
        times.medianAtMostSeconds = atMost(0.5)
        times.p90AtMostSeconds = atMost(0.9)
        return times
    }

    // MARK: Text

    /// The table for a terminal.
    public var text: String {
        let started = totals["started"] ?? 0
        func share(_ value: Int) -> String { started == 0 ? "" : String(format: "%.0f%%", Double(value) * 100 / Double(started)) }
        var rows: [[String]] = [["Sign-up funnel since \(Self.iso(since)), every instance", "forms", "of started"]]
        rows.append(["started", String(started), share(started)])
        rows.append(["first edit", String(totals["first_edits"] ?? 0), share(totals["first_edits"] ?? 0)])
        for step in steps.keys.sorted() {
            rows.append(["\(step) entered", String(steps[step]?["entered"] ?? 0), share(steps[step]?["entered"] ?? 0)])
            rows.append(["\(step) finished", String(steps[step]?["finished"] ?? 0), share(steps[step]?["finished"] ?? 0)])
        }
        rows.append(["completed", String(totals["completed"] ?? 0), share(totals["completed"] ?? 0)])
        rows.append(["abandoned", String(totals["abandoned"] ?? 0), share(totals["abandoned"] ?? 0)])
        var out = Self.table(rows)

        out += "\n" + Self.table([["What stopped people (unmet when abandoned after an edit)", "forms"]]
            + Self.byCount(abandonedUnmet).map { [$0.key, String($0.value)] } + (abandonedUnmet.isEmpty ? [["(none)", ""]] : []))
        out += "\n" + Self.table([["Refused posts, by reason", "posts"]]
            + Self.byCount(refused).map { [$0.key, String($0.value)] } + (refused.isEmpty ? [["(none)", ""]] : []))
        for group in ["javascript", "credential", "language"] {
            let shares = (by[group] ?? [:]).sorted { ($0.value.started, $1.key) > ($1.value.started, $0.key) }
            out += "\n" + Self.table([["By \(group)", "started", "completed", "abandoned"]]
                + shares.map { [$0.key, String($0.value.started), String($0.value.completed), String($0.value.abandoned)] }
                + (shares.isEmpty ? [["(none)", "", "", ""]] : []))
        }
        let met = requirementsMet.sorted { ($0.value.medianAtMostSeconds ?? .infinity, $0.key) > ($1.value.medianAtMostSeconds ?? .infinity, $1.key) }
        out += "\n" + Self.table([["Time to meet each requirement, from the first edit", "forms", "median", "90th pct", "mean"]]
            + met.map { [$0.key] + Self.cells($0.value, .requirementMet) } + (met.isEmpty ? [["(none)", "", "", "", ""]] : []))
        out += "\n" + Self.table([["Time to complete, from the page served", "forms", "median", "90th pct", "mean"],
                                  ["completed"] + Self.cells(completion, .completionSeconds)])
        return out
    }

    /// A histogram's row: past its last bound, a time is only known to be more than that.
    private static func cells(_ times: Times, _ metric: FunnelMetric) -> [String] {
        func bound(_ value: Double?) -> String {
            times.forms == 0 ? "" : value.map { "≤ " + duration($0) } ?? "> " + duration(metric.bounds?.last ?? 0)
        }
        return [String(times.forms), bound(times.medianAtMostSeconds), bound(times.p90AtMostSeconds),
                times.meanSeconds.map { duration($0) } ?? ""]
    }

    private static func duration(_ seconds: Double) -> String {
        seconds < 60 ? String(format: seconds < 10 ? "%.1f s" : "%.0f s", seconds)
            : seconds < 3600 ? String(format: "%.1f min", seconds / 60) : String(format: "%.1f h", seconds / 3600)
    }

    private static func byCount(_ values: [String: Int]) -> [(key: String, value: Int)] {
        values.sorted { ($0.value, $1.key) > ($1.value, $0.key) }
    }

    private static func table(_ rows: [[String]]) -> String {
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == 0 ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n") + "\n"
    }

    private static func iso(_ date: Date) -> String { date.ISO8601Format() }

    // MARK: JSON

    /// The same for programs: one object, keys sorted.
    public var json: String {
        struct Document: Encodable {
            let since: String
            let totals: [String: Int]
            let steps: [String: [String: Int]]
            let refused: [String: Int]
            let abandoned_unmet: [String: Int]
            let by: [String: [String: Share]]
            let requirements_met: [String: Times]
            let completion: Times
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let document = Document(since: Self.iso(since), totals: totals, steps: steps, refused: refused,
                                abandoned_unmet: abandonedUnmet, by: by, requirements_met: requirementsMet, completion: completion)
        return String(decoding: (try? encoder.encode(document)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
