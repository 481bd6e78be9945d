import Clocks
import CombineSchedulers
import Foundation
import Identity
import MicroHTTPD
import SignupDomain
import SignupWire
import FormWire
import ReactiveValidation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
import WebKernel
#endif

/// The server side of one page view: its view model, the edits applied to it, and the event
/// streams listening to it.
///
/// All state is touched holding one lock: an edit (or any call) on its caller's thread, and
/// the view model's scheduled work (debounced look-ups, their answers) and stream endings on
/// a serial queue, each action holding the lock too, so none of them ever race. Data flows
/// one way: edit → view model → changed outputs → events → every open stream.
final class LiveFormSession: @unchecked Sendable {
    /// What a session needs to build its view model on first use.
    struct Configuration {
        let policy: FormPolicy
        /// The breach source and the mail-domain checker the view model asks.
        let lookups: Lookups
        /// The language of every text the session sends (its snapshot's `lang`).
        let language: String
        /// `policy.initialEvaluation` as a snapshot, computed once for every session.
        let initialSnapshot: SignupSnapshot
        let availabilityDebounce: DispatchQueue.SchedulerTimeType.Stride
        let metrics: ServerMetrics?
        /// Where a sign-up form's funnel is counted (nil for other forms, such as a new password's).
        let funnel: FormFunnel?
        /// A new form's place in the funnel's split.
        let funnelDimensions: FormFunnel.Dimensions

        init(policy: FormPolicy, lookups: Lookups = .none, language: String = Languages.fallback,
             availabilityDebounce: DispatchQueue.SchedulerTimeType.Stride, metrics: ServerMetrics?, funnel: FormFunnel? = nil) {
            self.funnel = funnel
            funnelDimensions = funnel?.dimensions(language: language, credential: .password, javascript: true)
                ?? FormFunnel.Dimensions(language: 0, credential: .password, javascript: true)
            self.policy = policy
            self.lookups = lookups
            self.language = language
            var initial = policy.initialEvaluation.snapshot(rev: 0)
            initial.language = language
            self.initialSnapshot = initial
            self.availabilityDebounce = availabilityDebounce
            self.metrics = metrics
        }
    }

    let token: String
    private let configuration: Configuration
    private let availabilityChecker: any UsernameAvailabilityChecking
    /// Where the view model's scheduled work and stream endings run, one at a time.
    private let queue: DispatchQueue
    /// Held by everything that touches the state below: see `exclusively`.
    private let lock = NSLock()

    // Touched only holding `lock`.
    /// Built by the first edit: until someone types, the form is in the policy's initial
    /// state, so a page view that only holds its stream open costs no pipeline.
    private var viewModel: SignupViewModel?
    private var formSubscription: AnyCancellable?
    private var rev = 0
    private var lastAppliedSeq: [SignupField: UInt64] = [:]
    /// What the streams were last told: the form as last published (nil until the view
    /// model's first output; until then they were told `configuration.initialSnapshot`).
    private var published: FormEvaluation?
    private var nextEventID = 1
    private var streams: [ObjectIdentifier: EventStream] = [:]
    private var accountUsername: String?
    /// The registration options last sent (`POST /passkeys/options`), until a response uses them.
    private var passkeyOffer: PasskeyOffer?
    /// The passkey made on this form and verified: stored with the account it creates.
    private var madePasskey: NewPasskey?
    /// What the funnel counted for this form (with `configuration.funnel`).
    private var funnelProgress: FunnelProgress
    private let clock: any WallClock

    /// Written holding `lock`, read by the registry's sweeper from any thread.
    private let activity: ActivityClock

    init(
        token: String,
        configuration: Configuration,
        availabilityChecker: any UsernameAvailabilityChecking,
        clock: any WallClock
    ) {
        self.token = token
        self.configuration = configuration
        self.availabilityChecker = availabilityChecker
        // Targets the shared non-overcommit pool: a serial queue of its own would let
        // thousands of sessions waking at once (streams closing) spawn a thread each.
        self.queue = DispatchQueue(label: "form-session", target: .global())
        self.activity = ActivityClock(clock: clock)
        self.clock = clock
        funnelProgress = FunnelProgress(configuration.funnelDimensions)
    }

    /// The view model, built on first use. Its one output, the settled form, is diffed
    /// against what the streams were last told and only the changes go out, carrying the
    /// current rev: the edit's own while it is being applied, the latest for an
    /// availability answer arriving later.
    private func activeViewModel() -> SignupViewModel {
        if let viewModel { return viewModel }
        let viewModel = SignupViewModel(
            policy: configuration.policy,
            availabilityChecker: availabilityChecker,
            lookups: configuration.lookups,
            scheduler: SharedTimerScheduler(queue: queue, lock: lock).eraseToAnyScheduler(),
            availabilityDebounce: configuration.availabilityDebounce)
        self.viewModel = viewModel
        formSubscription = viewModel.$form.sink { [weak self] form in
            self?.publish(form)
        }
        return viewModel
    }

    /// Applies an edit unless a newer one for the same field was already applied. The
    /// receipt has its rev, or the current rev when it was stale and ignored.
    func apply(field: SignupField, value: String, seq: UInt64, touched: Bool) -> EditReceipt {
        edit(field, seq: seq) { viewModel in
            // The value first, then the visibility: the one intermediate state (new value,
            // problems not yet shown) is never wrong, only incomplete.
            // A blur repeats the value the person left, and setting it again would run the
            // whole evaluation for nothing, so a blur compares first. An input edit carries
            // a new value (the page posts one per input event), so it is set without reading
            // the old one: reading a `@Published` value is a key-path projection in
            // OpenCombine, about 1,700 instructions (issue 24). An input edit that does
            // repeat its value costs one evaluation, which the output drops as unchanged.
            if !touched || viewModel.value(of: field) != value { viewModel.setValue(value, for: field) }
            if touched && !viewModel.touchedFields.contains(field) { viewModel.touchedFields.insert(field) }
        }
    }

    /// Password or passkey (the `credential` edit), unless a newer choice was applied.
    func chooseCredential(_ method: CredentialMethod, seq: UInt64) -> EditReceipt {
        edit(Self.credentialEdit, seq: seq) { viewModel in
            if viewModel.credential.method != method {
                funnelProgress.dimensions.credential = method
                // The provider's sign-in is held whenever it is chosen (its route checked the cookie).
                viewModel.credential = method == .provider ? CredentialChoice(method: .provider, passkeyCreated: true)
                    : CredentialChoice(method: method, passkeyCreated: madePasskey != nil)
            }
        }
    }

    /// The `credential` edit's sequence numbers are kept beside the fields'.
    private static let credentialEdit = SignupField(rawValue: CredentialMethod.fieldName)

    /// Applies one edit of `key` unless a newer one was applied already; its events carry
    /// the new rev.
    private func edit(_ key: SignupField, seq: UInt64, _ change: (SignupViewModel) -> Void) -> EditReceipt {
        exclusively {
            activity.touch()
            if let last = lastAppliedSeq[key], seq <= last {
                return EditReceipt(rev: rev, applied: false)
            }
            lastAppliedSeq[key] = seq
            // Once per form: the time its requirements are met is counted from here.
            if funnelProgress.firstEditAt == nil, let funnel = configuration.funnel { funnel.firstEdit(&funnelProgress, at: clock.now) }
            // Bump first: events caused by this edit carry its rev.
            rev += 1
            change(activeViewModel())
            return EditReceipt(rev: rev, applied: true)
        }
    }

    /// What a registration response is checked against: the challenge sent, the user handle
    /// the credential is made for, and until when.
    struct PasskeyOffer {
        let challenge: [UInt8]
        let userHandle: [UInt8]
        let expiresAt: Date
        /// Also in a cookie of the browser that asked (`PasskeyRoutes.browserCookie`): the
        /// form's token travels in URLs, this does not, so only that browser can register.
        let browserNonce: String
    }

    /// Remembers the options just sent, replacing earlier ones.
    func offerPasskey(_ offer: PasskeyOffer) {
        exclusively {
            activity.touch()
            passkeyOffer = offer
        }
    }

    /// The username as typed so far: it names the passkey in the person's password manager.
    var typedUsername: String { exclusively { viewModel?.username ?? "" } }

    /// The offer a registration response answers, taken: each works once. Only when
    /// `browserNonces` hold its nonce (or there is no offer): a request from another browser
    /// gets `.otherBrowser` and leaves the offer for the browser that asked for it.
    func takePasskeyOffer(presenting browserNonces: [String]) -> PasskeyOfferTaken {
        exclusively {
            activity.touch()
            guard let offer = passkeyOffer else { return .none }
            guard browserNonces.contains(offer.browserNonce) else { return .otherBrowser }
            passkeyOffer = nil
            return .taken(offer)
        }
    }

    enum PasskeyOfferTaken {
        case taken(PasskeyOffer)
        case none
        case otherBrowser
    }

    /// A verified passkey for this form: `passkey.created` is met and the form's credential
    /// is the passkey.
    func acceptPasskey(_ passkey: NewPasskey) {
        exclusively {
            activity.touch()
            madePasskey = passkey
            funnelProgress.dimensions.credential = .passkey
            configuration.funnel?.firstEdit(&funnelProgress, at: clock.now)
            rev += 1
            activeViewModel().credential = CredentialChoice(method: .passkey, passkeyCreated: true)
        }
    }

    /// A form opened by a provider's answer (issue 45): its credential is the provider's
    /// sign-in (`provider.signed_in`, met), the address and the suggested username filled in
    /// (the username shown as touched, so a taken or refused suggestion says so at once).
    func startThroughProvider(values: [SignupField: String]) {
        exclusively {
            activity.touch()
            // The provider's answer fills the form in: its first edit, as a provider sign-up.
            funnelProgress.dimensions.credential = .provider
            configuration.funnel?.firstEdit(&funnelProgress, at: clock.now)
            rev += 1
            let viewModel = activeViewModel()
            viewModel.credential = CredentialChoice(method: .provider, passkeyCreated: true)
            for input in viewModel.inputs where !input.field.isSecret {
                if let value = values[input.field] { input.value = value }
            }
            if !(values[.username] ?? "").isEmpty { viewModel.touchedFields.insert(.username) }
        }
    }

    /// The passkey made on this form, if any.
    var passkey: NewPasskey? { exclusively { madePasskey } }

    /// Starts a stream with the reconnect delay and a full snapshot, then sends it changes.
    func attach(_ stream: EventStream, retryMilliseconds: Int) {
        exclusively {
            activity.touch()
            configuration.funnel?.start(&funnelProgress)
            stream.send(retry: retryMilliseconds)
            var snapshot = published?.snapshot(rev: rev) ?? configuration.initialSnapshot
            snapshot.language = configuration.language
            snapshot.rev = rev
            send([.snapshot(snapshot)], to: [stream])
            streams[ObjectIdentifier(stream)] = stream
            activity.setOpenStreams(streams.count)
        }
        stream.onTermination { [weak self] stream in
            guard let self else { return }
            // Later, not here: a stream can end inside a send, which holds the lock.
            queue.async {
                self.exclusively {
                    self.streams[ObjectIdentifier(stream)] = nil
                    self.activity.setOpenStreams(self.streams.count)
                    self.activity.touch()
                }
            }
        }
    }

    /// Puts the session in the state of a page re-rendered after a failed submit: what was
    /// typed kept, passwords empty (never sent back), every problem shown. The re-rendered
    /// page is a new page view whose script counts seqs from zero again.
    func prepareForResubmission(values: [SignupField: String], credential: CredentialMethod = .password) {
        exclusively {
            activity.touch()
            funnelProgress.dimensions.credential = credential
            configuration.funnel?.resume(&funnelProgress)
            rev += 1
            lastAppliedSeq = [:]
            let viewModel = activeViewModel()
            viewModel.credential = CredentialChoice(method: credential, passkeyCreated: credential == .provider || madePasskey != nil)
            // Values before visibility, as in `apply`: no intermediate state shows a
            // problem of a value that is already gone.
            for input in viewModel.inputs {
                input.value = input.field.isSecret ? "" : values[input.field] ?? ""
            }
            viewModel.submitAttempted = true
        }
    }

    /// The username this form already created an account for, if any.
    var createdAccountUsername: String? {
        exclusively { accountUsername }
    }

    /// Records that this form created an account; later submits of it are refused.
    func markAccountCreated(username: String) {
        exclusively {
            activity.touch()
            accountUsername = username
        }
    }

    /// Runs `body` holding the session's lock, on the caller's thread. Why a lock and not
    /// `queue.sync`: Dispatch's Swift overlay runs every `sync` through generic helpers
    /// (metadata look-ups, a boxed closure), about 2,700 instructions an edit; an
    /// uncontended lock is a few dozen. Never call it from inside itself: the lock is not
    /// recursive (nor was the queue).
    private func exclusively<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    var lastActivity: Date { activity.last }
    var hasOpenStreams: Bool { activity.openStreams > 0 }

    private func publish(_ form: FormEvaluation) {
        let previous = published ?? configuration.policy.initialEvaluation
        published = form
        let changes = form.changes(since: previous, rev: rev, policy: configuration.policy)
        if let funnel = configuration.funnel { countFirstMet(changes, funnel) }
        send(changes, to: streams.values)
    }

    /// Each requirement the changes newly meet: counted the first time on this form. On the
    /// typing path: matched in place (no copy of each event), and the form's met ids compared
    /// in a short array (the policy's own strings, equal by storage) rather than hashed.
    private func countFirstMet(_ changes: [SignupEvent], _ funnel: FormFunnel) {
        for index in changes.indices {
            guard case .requirement(let id, .met, _) = changes[index], !funnelProgress.met.contains(id) else { continue }
            funnel.met(id, &funnelProgress, at: clock.now)
        }
    }

    // MARK: The funnel

    /// Runs `body` on this form's funnel (a sign-up's post counting what it did), holding the
    /// session's lock; false, and nothing run, for a form without one.
    @discardableResult
    func countInFunnel(_ body: (inout FunnelProgress, FormFunnel) -> Void) -> Bool {
        exclusively {
            guard let funnel = configuration.funnel else { return false }
            body(&funnelProgress, funnel)
            return true
        }
    }

    /// The session is gone (closed and idle past its lifetime, or making room): unless it made
    /// its account or waits for its address's proof, the form was abandoned, with the
    /// requirements it had not met as last published.
    func endFunnel() {
        exclusively {
            guard let funnel = configuration.funnel else { return }
            funnel.end(&funnelProgress, unmet: published?.unmetRequirements(of: configuration.policy) ?? [])
        }
    }

    /// One write per stream for all `events` (the changes of one edit): its connection is
    /// woken once.
    private func send(_ events: [SignupEvent], to targets: some Collection<EventStream>) {
        guard !events.isEmpty, !targets.isEmpty else { return }
        let batch = events.map { event in
            defer { nextEventID += 1 }
            return EventStream.Event(name: event.name, data: event.data, id: String(nextEventID))
        }
        for stream in targets { stream.send(batch) }
        configuration.metrics?.eventsSent.increment(by: batch.count * targets.count)
    }
}

/// When a session was last used and whether anyone is listening, readable from any thread.
final class ActivityClock: @unchecked Sendable {
    private let lock = NSLock()
    private let clock: any WallClock
    private var lastValue: Date
    private var openStreamCount = 0

    init(clock: any WallClock) {
        self.clock = clock
        self.lastValue = clock.now
    }

    func touch() {
        let date = clock.now
        lock.withLock { lastValue = date }
    }

    func setOpenStreams(_ count: Int) { lock.withLock { openStreamCount = count } }

    var last: Date { lock.withLock { lastValue } }
    var openStreams: Int { lock.withLock { openStreamCount } }
}
