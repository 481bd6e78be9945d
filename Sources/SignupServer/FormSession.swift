import CombineSchedulers
import Foundation
import MicroHTTPD
import SignupDomain
import SignupWire
import FormWire
import ReactiveValidation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// The server side of one page view: its view model, the edits applied to it, and the event
/// streams listening to it.
///
/// All state lives on one serial queue, which is also the view model's scheduler, so edits,
/// debounced look-ups and stream (un)subscriptions never race. Data flows one way:
/// edit → view model → changed outputs → events → every open stream.
final class FormSession: @unchecked Sendable {
    let token: String
    private let queue: DispatchQueue
    private let viewModel: SignupViewModel
    private let requirementOrder: [String]

    // Touched only on `queue`.
    private var rev = 0
    private var lastAppliedSeq: [SignupField: UInt64] = [:]
    /// What the streams were last told (its `rev` is the rev it was published at).
    private var published: SignupSnapshot
    private var nextEventID = 1
    private var streams: [ObjectIdentifier: EventStream] = [:]
    private var outputsSubscription: AnyCancellable?
    /// While an edit is being applied the view model passes through intermediate states
    /// (one field's outputs updated, another's not yet); publish only the settled result.
    private var isApplyingEdit = false
    private var accountUsername: String?

    /// Written on `queue`, read by the registry's sweeper from any thread.
    private let activity: ActivityClock

    private let metrics: SignupMetrics?

    init(
        token: String,
        policy: SignupPolicy,
        metrics: SignupMetrics? = nil,
        availabilityChecker: any UsernameAvailabilityChecking,
        availabilityDebounce: DispatchQueue.SchedulerTimeType.Stride,
        now: @escaping @Sendable () -> Date
    ) {
        self.token = token
        self.metrics = metrics
        // Targets the shared non-overcommit pool: a serial queue of its own would let
        // thousands of sessions waking at once (streams closing) spawn a thread each.
        let queue = DispatchQueue(label: "form-session", target: .global())
        self.queue = queue
        self.activity = ActivityClock(now: now)
        self.requirementOrder = policy.allRequirements.map(\.id)
        let viewModel = SignupViewModel(
            policy: policy,
            availabilityChecker: availabilityChecker,
            scheduler: queue.eraseToAnyScheduler(),
            availabilityDebounce: availabilityDebounce)
        self.viewModel = viewModel
        self.published = Self.snapshot(rev: 0, requirements: viewModel.requirementStates,
                                       validations: viewModel.fieldValidations,
                                       strength: viewModel.strength, submitEnabled: viewModel.isSubmitEnabled)
        self.outputsSubscription = Publishers.CombineLatest4(
            viewModel.$requirementStates, viewModel.$fieldValidations,
            viewModel.$strength, viewModel.$isSubmitEnabled
        )
        .sink { [weak self] requirements, validations, strength, submitEnabled in
            // Outside an edit (e.g. an availability answer arriving) changes go out at once.
            guard let self, !self.isApplyingEdit else { return }
            self.publish(Self.snapshot(rev: self.rev, requirements: requirements, validations: validations,
                                       strength: strength, submitEnabled: submitEnabled))
        }
    }

    /// The wire snapshot of the view model's outputs: every field has a message ("" when hidden).
    private static func snapshot(
        rev: Int, requirements: [String: RequirementState], validations: [SignupField: FieldValidation],
        strength: PasswordStrength, submitEnabled: Bool
    ) -> SignupSnapshot {
        SignupSnapshot(
            rev: rev, requirements: requirements,
            messages: Dictionary(uniqueKeysWithValues: SignupField.allCases.map { ($0.rawValue, validations[$0]?.message ?? "") }),
            strength: strength, submitEnabled: submitEnabled)
    }

    private var currentSnapshot: SignupSnapshot {
        Self.snapshot(rev: rev, requirements: viewModel.requirementStates, validations: viewModel.fieldValidations,
                      strength: viewModel.strength, submitEnabled: viewModel.isSubmitEnabled)
    }

    private static let fieldOrder = SignupField.allCases.map(\.rawValue)

    /// Applies an edit unless a newer one for the same field was already applied. The
    /// receipt has its rev, or the current rev when it was stale and ignored.
    func apply(field: SignupField, value: String, seq: UInt64, touched: Bool) -> EditReceipt {
        queue.sync {
            activity.touch()
            if let last = lastAppliedSeq[field], seq <= last {
                return EditReceipt(rev: rev, applied: false)
            }
            lastAppliedSeq[field] = seq
            // Bump first: events caused by this edit carry its rev.
            rev += 1
            isApplyingEdit = true
            if viewModel.value(of: field) != value { viewModel.setValue(value, for: field) }
            if touched && !viewModel.touchedFields.contains(field) { viewModel.touchedFields.insert(field) }
            isApplyingEdit = false
            publish(currentSnapshot)
            return EditReceipt(rev: rev, applied: true)
        }
    }

    /// Starts a stream with the reconnect delay and a full snapshot, then sends it changes.
    func attach(_ stream: EventStream, retryMilliseconds: Int) {
        queue.sync {
            activity.touch()
            stream.send(retry: retryMilliseconds)
            var snapshot = published
            snapshot.rev = rev
            send(.snapshot(snapshot), to: [stream])
            streams[ObjectIdentifier(stream)] = stream
            activity.setOpenStreams(streams.count)
        }
        stream.onTermination { [weak self, weak stream] in
            guard let self, let stream else { return }
            queue.async {
                self.streams[ObjectIdentifier(stream)] = nil
                self.activity.setOpenStreams(self.streams.count)
                self.activity.touch()
            }
        }
    }

    /// Puts the session in the state of a page re-rendered after a failed submit: the
    /// username and email kept, passwords empty (never sent back), every problem shown.
    /// The re-rendered page is a new page view whose script counts seqs from zero again.
    func prepareForResubmission(username: String, email: String) {
        queue.sync {
            activity.touch()
            rev += 1
            lastAppliedSeq = [:]
            isApplyingEdit = true
            viewModel.username = username
            viewModel.email = email
            viewModel.password = ""
            viewModel.confirm = ""
            viewModel.submitAttempted = true
            isApplyingEdit = false
            publish(currentSnapshot)
        }
    }

    /// The username this form already created an account for, if any.
    var createdAccountUsername: String? {
        queue.sync { accountUsername }
    }

    /// Records that this form created an account; later submits of it are refused.
    func markAccountCreated(username: String) {
        queue.sync {
            activity.touch()
            accountUsername = username
        }
    }

    var lastActivity: Date { activity.last }
    var hasOpenStreams: Bool { activity.openStreams > 0 }

    private func publish(_ snapshot: SignupSnapshot) {
        let events = snapshot.changes(since: published, requirementOrder: requirementOrder, fieldOrder: Self.fieldOrder)
        published = snapshot
        guard !events.isEmpty, !streams.isEmpty else { return }
        let targets = Array(streams.values)
        for event in events { send(event, to: targets) }
    }

    private func send(_ event: SignupEvent, to targets: [EventStream]) {
        let data = event.data
        let id = String(nextEventID)
        nextEventID += 1
        for stream in targets { stream.send(event: event.name, data: data, id: id) }
        metrics?.eventsSent.increment(by: targets.count)
    }
}

/// When a session was last used and whether anyone is listening, readable from any thread.
final class ActivityClock: @unchecked Sendable {
    private let lock = NSLock()
    private let now: @Sendable () -> Date
    private var lastValue: Date
    private var openStreamCount = 0

    init(now: @escaping @Sendable () -> Date) {
        self.now = now
        self.lastValue = now()
    }

    func touch() {
        let date = now()
        lock.withLock { lastValue = date }
    }

    func setOpenStreams(_ count: Int) { lock.withLock { openStreamCount = count } }

    var last: Date { lock.withLock { lastValue } }
    var openStreams: Int { lock.withLock { openStreamCount } }
}
