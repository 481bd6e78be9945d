import Foundation

/// The sign-up funnel's measures (issue 59): what became of sign-up forms, counted, never
/// who. Each is a Prometheus metric `livesignup_form_<name>` and a row name in the store's
/// funnel table (`FunnelCounts`); every one is split by the form's language, credential and
/// whether it ran JavaScript, some by one more label (`detailLabel`).
public enum FunnelMetric: String, CaseIterable, Sendable {
    /// A form came to life: its live session's first use, or (without JavaScript) its first post.
    case started
    /// Its first applied edit (without JavaScript: its first post, which carries every field).
    case firstEdits = "first_edits"
    /// A requirement met for the first time on a form, by `requirement`, and how long after
    /// the form's first edit (a histogram: its `_count` is how many forms met it). Live forms only.
    case requirementMet = "requirement_met_seconds"
    /// A sign-up post refused, by `reason` (`livesignup_signups_total`'s refusals).
    case submitsRefused = "submits_refused"
    /// A form reaching a step, by `step`: `proof_of_work` (its post met the gate), `address_proof`
    /// (a code mailed before the account is made).
    case stepsEntered = "steps_entered"
    /// A step passed, by `step`.
    case stepsFinished = "steps_finished"
    /// An account made from a form (at once, or when its address was proved).
    case completed
    /// From the page being served to its account being made (a histogram).
    case completionSeconds = "completion_seconds"
    /// A form ended without an account: its session was dropped (closed, or idle past its
    /// lifetime) or, without JavaScript, its token went unused that long after a refused post.
    case abandoned
    /// On each abandoned form that had an edit, every requirement still unmet, by `requirement`.
    case abandonedUnmet = "abandoned_unmet"

    /// The Prometheus name: counters end in `_total`, histograms in their unit.
    public var prometheusName: String { "livesignup_form_" + rawValue + (bounds == nil ? "_total" : "") }

    /// The one label beyond the three every measure has.
    public var detailLabel: String? {
        switch self {
        case .requirementMet, .abandonedUnmet: "requirement"
        case .submitsRefused: "reason"
        case .stepsEntered, .stepsFinished: "step"
        default: nil
        }
    }

    /// A histogram's upper bounds in seconds (nil for a counter).
    public var bounds: [Double]? {
        switch self {
        // A rule is met in seconds (a username) to minutes (a password that satisfies all).
        case .requirementMet: [1, 2, 5, 10, 20, 30, 60, 120, 300, 600]
        // A whole sign-up: from a quick passkey to a mailed code read an hour later.
        case .completionSeconds: [10, 20, 30, 60, 120, 300, 600, 1800, 3600, 14_400]
        default: nil
        }
    }

    public var help: String {
        switch self {
        case .started: "Sign-up forms that came to life (a live session's first use, or a first post without JavaScript)."
        case .firstEdits: "Sign-up forms with a first edit (without JavaScript: a first post)."
        case .requirementMet: "Seconds from a form's first edit to each requirement's first met state, per form."
        case .submitsRefused: "Sign-up posts refused, by reason."
        case .stepsEntered: "Sign-up forms that reached a step (proof_of_work, address_proof)."
        case .stepsFinished: "Sign-up forms that passed a step (proof_of_work, address_proof)."
        case .completed: "Accounts made from a sign-up form."
        case .completionSeconds: "Seconds from a sign-up page being served to its account being made."
        case .abandoned: "Sign-up forms that ended without an account."
        case .abandonedUnmet: "Requirements still unmet on abandoned forms that had an edit."
        }
    }
}

/// One counted series: a measure and its labels, and for a histogram which cell (`bucket`).
public struct FunnelSeries: Hashable, Sendable {
    public var metric: FunnelMetric
    /// The `detailLabel`'s value ("" for a measure without one).
    public var detail: String
    /// "" for a counter. A histogram's cells: each upper bound as written in `le` ("5", "+Inf")
    /// holding the observations in that bucket alone (not cumulative, so instances add), and
    /// `sum_ms`, the observations' sum in milliseconds.
    public var bucket: String
    public var language: String
    public var credential: String
    public var javascript: Bool

    public init(metric: FunnelMetric, detail: String = "", bucket: String = "", language: String, credential: String,
                javascript: Bool) {
        self.metric = metric
        self.detail = detail
        self.bucket = bucket
        self.language = language
        self.credential = credential
        self.javascript = javascript
    }

    /// The period a count at `date` belongs to: the start of its minute (UTC), the store's
    /// row for it, and the first period a `since` reads.
    public static func period(of date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 60).rounded(.down) * 60)
    }

    /// A histogram cell's name for the sum of its observations.
    public static let sumBucket = "sum_ms"

    /// How an upper bound is written in `bucket` and in Prometheus' `le`.
    public static func bucketName(_ bound: Double?) -> String {
        guard let bound else { return "+Inf" }
        return bound == bound.rounded() ? String(Int(bound)) : String(bound)
    }
}

/// A series and how much it counted.
public struct FunnelCount: Hashable, Sendable {
    public var series: FunnelSeries
    public var value: Int

    public init(_ series: FunnelSeries, _ value: Int) {
        self.series = series
        self.value = value
    }
}

/// Where every instance's funnel counts add up (issue 59): one row per minute and series,
/// each instance adding its counts to it, so `signup-server funnel` reads one sum.
public protocol FunnelCounts {
    /// Adds each count to its series' row for the minute `period` starts (created at 0).
    func addFunnelCounts(_ counts: [FunnelCount], period: Date) throws
    /// Every series counted in periods starting at or after `since`, summed over them.
    func funnelCounts(since: Date) throws -> [FunnelCount]
    /// Forgets periods that started before `date`; returns how many rows went.
    func removeFunnelCounts(before date: Date) throws -> Int
}
