import Foundation
import SignupDomain
import SignupWire
import Synchronization

/// A step a sign-up form may have to pass before its account is made.
enum FunnelStep: String, CaseIterable, Sendable {
    /// The form's post met the proof-of-work gate.
    case proofOfWork = "proof_of_work"
    /// A code went to the address; the account is made when it comes back.
    case addressProof = "address_proof"
}

/// The sign-up funnel's counts in this process (issue 59): how many forms started, were
/// edited, met each requirement (and how long after their first edit), were refused and
/// why, passed each step, were completed or abandoned (and with which requirements unmet),
/// each split by language, credential and JavaScript. Counts only: nothing about any one form
/// outlives it.
///
/// Every series is one atomic cell in one array laid out at start (every label comes from a
/// fixed set: the catalogs' languages, the policies' requirements, the outcomes), so counting
/// takes no lock and allocates nothing: the typing path counts a form's first edit and each
/// requirement's first met state, an atomic add each. `/metrics` reads the cells as they are;
/// `flush(to:at:)` adds what the store has not had yet to the store's rows, every few seconds,
/// off the typing path, so the instances' counts add up there (`signup-server funnel`).
final class FormFunnel: @unchecked Sendable {
    /// Where a form falls in the split. The credential is the one chosen when a count is made
    /// (a form starts as `password` and may switch); language and JavaScript never change.
    struct Dimensions: Sendable, Equatable {
        /// An index into `languages`.
        var language: Int
        var credential: CredentialMethod
        var javascript: Bool
    }

    /// The refusals counted (`livesignup_signups_total`'s results that are not an account).
    static let refusalReasons = SignupOutcome.allCases.filter { $0 != .created && $0 != .pending }

    /// The catalogs' language tags; a series' language is an index into them.
    private let languages: [String]
    private let languageIndex: [String: Int]
    /// Each requirement id's place in `init`'s list (the policies' order).
    private let requirementIndex: [String: Int]
    private let reasonIndex: [SignupOutcome: Int]

    /// Where each measure's cells begin, and how they are laid out after it: for each detail
    /// value, for each `Dimensions`, `cellsPerSeries` cells (a histogram's buckets, its
    /// overflow and its sum in milliseconds; a counter's one).
    private struct Layout {
        let metric: FunnelMetric
        let base: Int
        /// Its first series' number among every measure's (its flag in `dirty`).
        let firstSeries: Int
        let details: [String]
        let cellsPerSeries: Int
        var bounds: [Double] { metric.bounds ?? [] }
    }
    private let layouts: [FunnelMetric: Layout]
    private let cellCount: Int
    private let dimensionCount: Int
    private let cells: UnsafeMutablePointer<Atomic<Int>>
    /// One flag a series, set when it counts and taken by the flush: a flush reads only the
    /// cells of series that counted since the last (a few, of some twenty thousand cells).
    private let dirty: UnsafeMutablePointer<Atomic<Bool>>
    private let seriesCount: Int
    /// Each cell's value as the store last took it: only the flush reads and writes it.
    private let flushed: Mutex<[Int]>
    /// The funnel of forms posted without JavaScript (no live session keeps theirs), by
    /// token: at most `noScriptCapacity`, each ended (abandoned) when unused for `idleLifetime`.
    private let noScriptForms = Mutex<[String: FunnelProgress]>([:])
    private let noScriptCapacity: Int
    private let idleLifetime: TimeInterval

    init(languages: [String], requirements: [String], noScriptCapacity: Int, idleLifetime: TimeInterval) {
        self.languages = languages
        languageIndex = Dictionary(languages.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        requirementIndex = Dictionary(requirements.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        reasonIndex = Dictionary(uniqueKeysWithValues: Self.refusalReasons.enumerated().map { ($1, $0) })
        self.noScriptCapacity = max(1, noScriptCapacity)
        self.idleLifetime = idleLifetime
        dimensionCount = max(1, languages.count) * CredentialMethod.allCases.count * 2
        var base = 0, series = 0
        var layouts: [FunnelMetric: Layout] = [:]
        for metric in FunnelMetric.allCases {
            let details: [String] = switch metric.detailLabel {
            case "requirement": requirements
            case "reason": Self.refusalReasons.map(\.rawValue)
            case "step": FunnelStep.allCases.map(\.rawValue)
            default: [""]
            }
            let layout = Layout(metric: metric, base: base, firstSeries: series, details: details,
                                cellsPerSeries: metric.bounds.map { $0.count + 2 } ?? 1)
            layouts[metric] = layout
            base += details.count * dimensionCount * layout.cellsPerSeries
            series += details.count * dimensionCount
        }
        self.layouts = layouts
        cellCount = base
        cells = .allocate(capacity: base)
        for index in 0..<base { (cells + index).initialize(to: Atomic(0)) }
        seriesCount = series
        dirty = .allocate(capacity: series)
        for index in 0..<series { (dirty + index).initialize(to: Atomic(false)) }
        flushed = Mutex([Int](repeating: 0, count: base))
    }

    deinit {
        cells.deinitialize(count: cellCount)
        cells.deallocate()
        dirty.deinitialize(count: seriesCount)
        dirty.deallocate()
    }

    /// The dimensions of a form in `language` (a catalog's tag; another counts as the first).
    func dimensions(language: String, credential: CredentialMethod, javascript: Bool) -> Dimensions {
        Dimensions(language: languageIndex[language] ?? 0, credential: credential, javascript: javascript)
    }

    // MARK: Counting

    /// The series' number within its measure: (detail, dimensions) in order.
    private func seriesNumber(detail: Int, _ dimensions: Dimensions) -> Int {
        let credential = switch dimensions.credential {
        case .password: 0
        case .passkey: 1
        case .provider: 2
        }
        let dimension = (dimensions.language * CredentialMethod.allCases.count + credential) * 2 + (dimensions.javascript ? 1 : 0)
        return detail * dimensionCount + dimension
    }

    private func count(_ metric: FunnelMetric, detail: Int = 0, _ dimensions: Dimensions) {
        guard let layout = layouts[metric] else { return }
        let series = seriesNumber(detail: detail, dimensions)
        cells[layout.base + series * layout.cellsPerSeries].add(1, ordering: .relaxed)
        // After the count (releasing): a flush that takes the flag sees the count too.
        dirty[layout.firstSeries + series].store(true, ordering: .releasing)
    }

    private func observe(_ metric: FunnelMetric, detail: Int = 0, seconds: Double, _ dimensions: Dimensions) {
        guard let layout = layouts[metric] else { return }
        let series = seriesNumber(detail: detail, dimensions)
        let base = layout.base + series * layout.cellsPerSeries, bounds = layout.bounds
        let seconds = max(0, seconds)
        cells[base + (bounds.firstIndex { seconds <= $0 } ?? bounds.count)].add(1, ordering: .relaxed)
        cells[base + bounds.count + 1].add(Int((seconds * 1000).rounded()), ordering: .relaxed)
        dirty[layout.firstSeries + series].store(true, ordering: .releasing)
    }

    /// The form came to life (once).
    func start(_ progress: inout FunnelProgress) {
        guard !progress.started else { return }
        progress.started = true
        count(.started, progress.dimensions)
    }

    /// Its first edit (once), the clock for every requirement it meets after.
    func firstEdit(_ progress: inout FunnelProgress, at now: Date) {
        guard progress.firstEditAt == nil else { return }
        start(&progress)
        progress.firstEditAt = now
        count(.firstEdits, progress.dimensions)
    }

    /// `requirement` met for the first time on this form, `now`.
    func met(_ requirement: String, _ progress: inout FunnelProgress, at now: Date) {
        guard let firstEdit = progress.firstEditAt, let detail = requirementIndex[requirement],
              !progress.met.contains(requirement) else { return }
        progress.met.append(requirement)
        observe(.requirementMet, detail: detail, seconds: now.timeIntervalSince(firstEdit), progress.dimensions)
    }

    /// A post refused: by its form's dimensions.
    func refused(_ reason: SignupOutcome, _ dimensions: Dimensions) {
        guard let detail = reasonIndex[reason] else { return }
        count(.submitsRefused, detail: detail, dimensions)
    }

    /// The form reached `step` (counted once per form).
    func enter(_ step: FunnelStep, _ progress: inout FunnelProgress) {
        guard progress.entered.insert(step).inserted else { return }
        count(.stepsEntered, detail: FunnelStep.allCases.firstIndex(of: step)!, progress.dimensions)
    }

    /// The form passed `step` (counted once per form).
    func finish(_ step: FunnelStep, _ progress: inout FunnelProgress) {
        guard progress.finished.insert(step).inserted else { return }
        count(.stepsFinished, detail: FunnelStep.allCases.firstIndex(of: step)!, progress.dimensions)
    }

    /// A code went to the form's address: its account comes when the code does (`completed`),
    /// and until the form is back (another address) it is not abandoned.
    func waitForAddressProof(_ progress: inout FunnelProgress) {
        enter(.addressProof, &progress)
        progress.outcome = .waitingForAddressProof
    }

    /// The form is in use again after waiting (the person chose another address).
    func resume(_ progress: inout FunnelProgress) {
        if progress.outcome == .waitingForAddressProof { progress.outcome = .open }
    }

    /// The form made its account, `seconds` after its page was served (nil: unknown).
    func complete(_ progress: inout FunnelProgress, seconds: Double?) {
        guard progress.outcome != .completed else { return }
        progress.outcome = .completed
        completed(progress.dimensions, seconds: seconds)
    }

    /// An account made when its address was proved: the step passed and the form completed,
    /// by what the waiting sign-up kept of its form (maybe on another instance).
    func completedByAddressProof(_ dimensions: Dimensions, seconds: Double?) {
        count(.stepsFinished, detail: FunnelStep.allCases.firstIndex(of: .addressProof)!, dimensions)
        completed(dimensions, seconds: seconds)
    }

    private func completed(_ dimensions: Dimensions, seconds: Double?) {
        count(.completed, dimensions)
        if let seconds { observe(.completionSeconds, seconds: seconds, dimensions) }
    }

    /// The form is gone without an account: abandoned, and (when it was edited) each of the
    /// requirements `unmet` counted. Nothing for a form completed or waiting for its proof.
    func end(_ progress: inout FunnelProgress, unmet: [String]) {
        guard progress.started, progress.outcome == .open else { return }
        progress.outcome = .ended
        count(.abandoned, progress.dimensions)
        guard progress.firstEditAt != nil else { return }
        for requirement in unmet {
            if let detail = requirementIndex[requirement] { count(.abandonedUnmet, detail: detail, progress.dimensions) }
        }
    }

    // MARK: Forms without JavaScript

    /// Runs `body` on the funnel of the form posted without JavaScript under `token` (a
    /// genuine one): begun now, started and edited (its post carries every field), if this is
    /// its first post. A form done with (completed, waiting for its proof) stays until its
    /// lifetime is over, so a post of it again (a double click, another address) is the same
    /// form, not a new one; only an open one is counted as abandoned then.
    /// With `beginning` false, only a form already begun is counted in: false when there is none.
    @discardableResult
    func noScriptForm(_ token: String, _ dimensions: Dimensions, at now: Date, beginning: Bool = true,
                      _ body: (inout FunnelProgress) -> Void) -> Bool {
        var evicted: [FunnelProgress] = []
        let counted = noScriptForms.withLock { forms in
            guard beginning || forms[token] != nil else { return false }
            var progress = forms.removeValue(forKey: token) ?? FunnelProgress(dimensions)
            progress.dimensions.credential = dimensions.credential
            progress.lastUsed = now
            firstEdit(&progress, at: now)
            body(&progress)
            if forms.count >= noScriptCapacity {
                // Full: the longest unused give way (a hundredth at a time, so a full table is
                // not scanned on every post), counted as abandoned like any that went idle.
                let oldest = forms.sorted { $0.value.lastUsed < $1.value.lastUsed }.prefix(max(1, noScriptCapacity / 100))
                for (key, form) in oldest {
                    forms[key] = nil
                    evicted.append(form)
                }
            }
            forms[token] = progress
            return true
        }
        for var form in evicted { end(&form, unmet: form.unmet) }
        return counted
    }

    /// Ends the forms without JavaScript unused for their lifetime (abandoned); returns how many.
    @discardableResult
    func endIdleNoScriptForms(at now: Date) -> Int {
        let cutoff = now.addingTimeInterval(-idleLifetime)
        let idle = noScriptForms.withLock { forms in
            let idle = forms.filter { $0.value.lastUsed < cutoff }
            for key in idle.keys { forms[key] = nil }
            return Array(idle.values)
        }
        for var form in idle { end(&form, unmet: form.unmet) }
        return idle.count
    }

    // MARK: Reading

    /// Each non-empty series with its value now (a histogram's cells each on their own).
    private func series(at index: Int) -> FunnelSeries {
        let layout = layouts.values.first { index >= $0.base && index < $0.base + $0.details.count * dimensionCount * $0.cellsPerSeries }!
        let offset = index - layout.base
        let cell = offset % layout.cellsPerSeries, seriesNumber = offset / layout.cellsPerSeries
        let dimension = seriesNumber % dimensionCount, detail = seriesNumber / dimensionCount
        let credentials = CredentialMethod.allCases.count
        let language = dimension / (credentials * 2), credential = (dimension / 2) % credentials
        let bucket = layout.metric.bounds == nil ? ""
            : cell < layout.bounds.count ? FunnelSeries.bucketName(layout.bounds[cell])
            : cell == layout.bounds.count ? FunnelSeries.bucketName(nil) : FunnelSeries.sumBucket
        return FunnelSeries(metric: layout.metric, detail: layout.details[detail], bucket: bucket,
                            language: languages.isEmpty ? "" : languages[language],
                            credential: CredentialMethod.allCases[credential].rawValue, javascript: dimension % 2 == 1)
    }

    /// What the counts are now, cell by cell.
    private func values() -> [Int] { (0..<cellCount).map { cells[$0].load(ordering: .relaxed) } }

    /// Adds what was counted since the last flush to the store's row for this minute. When the
    /// store fails, nothing is marked taken: the next flush carries it (nothing is lost while
    /// the process lives). Flushes run one at a time (the app's timer, its stop).
    func flush(to store: any FunnelCounts, at now: Date) throws {
        let minute = FunnelSeries.period(of: now)
        try flushed.withLock { flushed in
            var counts: [FunnelCount] = [], taken: [(index: Int, value: Int)] = [], flagged: [Int] = []
            for layout in layouts.values {
                for number in 0..<(layout.details.count * dimensionCount) {
                    // Taken (acquiring) before its cells are read: a count made after this is
                    // flagged again for the next flush, never lost.
                    guard dirty[layout.firstSeries + number].exchange(false, ordering: .acquiring) else { continue }
                    flagged.append(layout.firstSeries + number)
                    let base = layout.base + number * layout.cellsPerSeries
                    for index in base..<(base + layout.cellsPerSeries) {
                        let value = cells[index].load(ordering: .relaxed)
                        guard value != flushed[index] else { continue }
                        counts.append(FunnelCount(series(at: index), value - flushed[index]))
                        taken.append((index, value))
                    }
                }
            }
            guard !counts.isEmpty else { return }
            do {
                try store.addFunnelCounts(counts, period: minute)
            } catch {
                // Not taken: flagged again, so the next flush carries them.
                for number in flagged { dirty[number].store(true, ordering: .releasing) }
                throw error
            }
            for (index, value) in taken { flushed[index] = value }
        }
    }

    /// The Prometheus text of every funnel measure: each one's `# HELP` and `# TYPE` always
    /// (a dashboard finds every name on a fresh server), its series once they count something.
    func renderPrometheus(into buffer: inout [UInt8]) {
        let current = values()
        var text = ""
        for metric in FunnelMetric.allCases {
            guard let layout = layouts[metric] else { continue }
            let name = metric.prometheusName
            text += "# HELP \(name) \(metric.help)\n# TYPE \(name) \(metric.bounds == nil ? "counter" : "histogram")\n"
            for detail in layout.details.indices {
                for dimension in 0..<dimensionCount {
                    let base = layout.base + (detail * dimensionCount + dimension) * layout.cellsPerSeries
                    let total = current[base..<(base + (metric.bounds == nil ? 1 : layout.bounds.count + 1))].reduce(0, +)
                    guard total > 0 else { continue }
                    let series = series(at: base)
                    var labels = metric.detailLabel.map { "\($0)=\"\(Self.escaped(series.detail))\"," } ?? ""
                    labels += "language=\"\(Self.escaped(series.language))\",credential=\"\(series.credential)\",javascript=\"\(series.javascript ? "yes" : "no")\""
                    guard metric.bounds != nil else {
                        text += "\(name){\(labels)} \(total)\n"
                        continue
                    }
                    var cumulative = 0
                    for (cell, bound) in (layout.bounds.map(Optional.some) + [nil]).enumerated() {
                        cumulative += current[base + cell]
                        text += "\(name)_bucket{\(labels),le=\"\(FunnelSeries.bucketName(bound))\"} \(cumulative)\n"
                    }
                    text += "\(name)_sum{\(labels)} \(Double(current[base + layout.bounds.count + 1]) / 1000)\n"
                    text += "\(name)_count{\(labels)} \(total)\n"
                }
            }
        }
        buffer.append(contentsOf: Array(text.utf8))
    }

    /// A label value as Prometheus' text format writes it (requirement ids come from the
    /// operator's policy file).
    private static func escaped(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}

/// One form's way through the funnel: what was counted for it already, so each count is
/// made once. Kept by its live session (under the session's lock) or, for a form without
/// JavaScript, by `FormFunnel`; gone with the form. It holds no value anyone typed.
struct FunnelProgress: Sendable {
    enum Outcome: Sendable {
        case open
        case waitingForAddressProof
        case completed
        case ended
    }

    var dimensions: FormFunnel.Dimensions
    var started = false
    var firstEditAt: Date?
    /// The requirements met so far (a handful; an array is cheaper to search than a set to hash).
    var met: [String] = []
    var entered: Set<FunnelStep> = []
    var finished: Set<FunnelStep> = []
    var outcome = Outcome.open
    /// Without JavaScript: the requirements its last refused post left unmet.
    var unmet: [String] = []
    var lastUsed = Date.distantPast

    init(_ dimensions: FormFunnel.Dimensions) {
        self.dimensions = dimensions
    }
}
