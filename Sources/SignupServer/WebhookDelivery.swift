import Foundation
import Logging
import MicroHTTPD
import OutsideHTTP
import SignupDomain

/// Sends the outbox's events to the operator's receiver as Standard Webhooks
/// (standardwebhooks.com): a JSON body, `webhook-id` (the same on every attempt, so receivers
/// can drop duplicates), `webhook-timestamp` (this attempt's) and `webhook-signature`.
///
/// At least once: an event leaves the outbox only when a receiver answered 2xx. A 4xx other
/// than 408 or 429 parks it (the receiver said no; logged for the operator); anything else
/// (5xx, 408, 429, a timeout, no answer) is tried again after an exponential, jittered backoff,
/// until `retryWindow` after the event. With several instances each claims its own events
/// (`EventOutbox.claimDueEvents`). One thread, one attempt at a time: a sign-up never waits for
/// a receiver, and a slow receiver slows only its own deliveries.
final class WebhookDelivery: Sendable {
    private let settings: WebhookSettings
    private let store: any EventOutbox
    private let fetcher: BoundedHTTPFetcher
    private let metrics: SignupMetrics
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let condition = NSCondition()
    private let state = Locked((running: false, stopped: false, nudged: false))
    private let finished = DispatchSemaphore(value: 0)

    init(settings: WebhookSettings, store: any EventOutbox, metrics: SignupMetrics, logger: Logger, now: @escaping @Sendable () -> Date) {
        self.settings = settings
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.now = now
        // Sequential attempts; no pause after failures (the backoff paces each event).
        fetcher = BoundedHTTPFetcher(
            limits: .init(maxBytes: 64 * 1024, deadline: settings.attemptTimeout, maxConcurrent: 1,
                          failuresBeforePause: .max, pause: 0),
            headers: ["Content-Type": "application/json", "User-Agent": "LiveSignup"], now: now)
    }

    func start() {
        let starting = state.withLock { state -> Bool in
            defer { state.running = true }
            return !state.running && !state.stopped
        }
        guard starting else { return }
        let thread = Thread { [self] in run() }
        thread.name = "webhooks"
        thread.start()
    }

    /// An event was written: look now rather than at the next poll.
    func nudge() {
        condition.withLock {
            state.withLock { $0.nudged = true }
            condition.signal()
        }
    }

    func stop() {
        let wasRunning = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return state.running && !state.stopped
        }
        guard wasRunning else { return }
        condition.withLock { condition.signal() }
        finished.wait()
    }

    private func run() {
        while !state.withLock({ $0.stopped }) {
            // Keep going while passes find events; then wait for a nudge or the poll.
            while !state.withLock({ $0.stopped }), deliverDue() > 0 {}
            condition.withLock {
                if !state.withLock({ $0.nudged || $0.stopped }) {
                    _ = condition.wait(until: Date().addingTimeInterval(settings.pollInterval))
                }
                state.withLock { $0.nudged = false }
            }
        }
        finished.signal()
    }

    /// One pass: claims the due events and attempts each once. Returns how many it claimed.
    @discardableResult
    func deliverDue() -> Int {
        let claimed: [ClaimedEvent]
        do {
            // The lease outlasts the batch's attempts, so no other instance takes one meanwhile;
            // if this process dies mid-attempt, the events are due again when it ends.
            claimed = try store.claimDueEvents(at: now(), limit: settings.batch,
                                               lease: Double(settings.batch) * (settings.attemptTimeout + 1) + 4)
        } catch {
            logger.warning("Webhook outbox unavailable", metadata: ["error": "\(error)"])
            return 0
        }
        for event in claimed { attempt(event) }
        return claimed.count
    }

    private func attempt(_ claimed: ClaimedEvent) {
        let event = claimed.event
        let attempts = claimed.attempts + 1
        let timestamp = Int(now().timeIntervalSince1970)
        let headers = [
            "webhook-id: \(event.id)", "webhook-timestamp: \(timestamp)",
            "webhook-signature: \(settings.secret.signature(id: event.id, timestamp: timestamp, body: event.body))",
        ]
        let failure: String
        var parkNow = false
        do {
            _ = try fetcher.post(settings.url, body: Array(event.body.utf8), headers: headers)
            record { try store.markDelivered(eventID: event.id, attempts: attempts, at: now()) }
            metrics.webhook("delivered")
            return
        } catch {
            failure = "\(settings.url.host ?? "the receiver") \(error)"
            if case .status(let code) = error, (400...499).contains(code), code != 408, code != 429 { parkNow = true }
        }
        let time = now()
        if parkNow || time.timeIntervalSince(event.createdAt) >= settings.retryWindow {
            record { try store.park(eventID: event.id, attempts: attempts, error: failure) }
            metrics.webhook("parked")
            logger.warning("Webhook parked: it will not be sent again", metadata: [
                "webhook_id": "\(event.id)", "type": "\(event.type)", "attempts": "\(attempts)", "error": "\(failure)"])
            return
        }
        let delay = min(settings.maximumRetryDelay, settings.firstRetryDelay * pow(2, Double(min(attempts - 1, 30))))
        let jittered = delay * Double.random(in: 0.75...1.25)
        record { try store.scheduleRetry(eventID: event.id, attempts: attempts, at: time.addingTimeInterval(jittered), error: failure) }
        metrics.webhook("retried")
        logger.info("Webhook will be retried", metadata: [
            "webhook_id": "\(event.id)", "attempts": "\(attempts)", "in_seconds": "\(Int(jittered.rounded()))", "error": "\(failure)"])
    }

    /// Records an outcome; a store that cannot take it leaves the event leased, so it is tried
    /// again when the lease ends (at least once, never lost).
    private func record(_ write: () throws -> Void) {
        do { try write() } catch {
            logger.warning("Webhook outcome not recorded; it will be tried again", metadata: ["error": "\(error)"])
        }
    }
}

/// Where webhooks go and how they are retried (`--webhook-url` and friends).
public struct WebhookSettings: Sendable {
    public var url: URL
    public var secret: WebhookSecret
    /// How long after an event it is still tried.
    public var retryWindow: TimeInterval = 24 * 3600
    /// The first retry's delay; each next one doubles, up to `maximumRetryDelay`.
    public var firstRetryDelay: TimeInterval = 5
    public var maximumRetryDelay: TimeInterval = 3600
    /// One attempt in all, connecting included.
    public var attemptTimeout: TimeInterval = 10
    /// Events claimed per pass. One: each claim's lease then needs to cover one attempt only,
    /// so an event claimed by a process that died is free again within `attemptTimeout` + 5 s.
    public var batch = 1
    /// How often the outbox is looked at when nothing nudged it.
    public var pollInterval: TimeInterval = 1

    public init(url: URL, secret: WebhookSecret) {
        self.url = url
        self.secret = secret
    }
}
