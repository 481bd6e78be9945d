import Clocks
import Foundation
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel
import Locking

/// Delivers one outbox channel (webhooks, mails) at least once: an event leaves the outbox
/// only when its courier says it was taken. A refusal for good (a webhook receiver's 4xx other
/// than 408 or 429, a mail server's "no such mailbox") parks it, logged for the operator;
/// anything else (no answer, a timeout, a 5xx, a mail server that is down) is tried again after
/// an exponential, jittered backoff, until `retryWindow` after the event. With several
/// instances each claims its own events (`EventOutbox.claimDueEvents`). One thread per
/// channel, one attempt at a time: nobody waits for a receiver, and a slow receiver slows only
/// its own channel.
package final class OutboxDelivery: Sendable {
    package let channel: OutboxChannel
    private let schedule: DeliverySchedule
    private let courier: any OutboxCourier
    private let store: any EventOutbox
    private let metrics: OutboxMetrics
    private let logger: Logger
    /// Events come due, are leased and retried by it.
    private let clock: any WallClock
    private let condition = NSCondition()
    private let state = Locked((running: false, stopped: false, nudged: false))
    private let finished = DispatchSemaphore(value: 0)

    package init(channel: OutboxChannel, schedule: DeliverySchedule, courier: any OutboxCourier, store: any EventOutbox,
         metrics: OutboxMetrics, logger: Logger, clock: any WallClock) {
        self.channel = channel
        self.schedule = schedule
        self.courier = courier
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
    }

    package func start() {
        let starting = state.withLock { state -> Bool in
            defer { state.running = true }
            return !state.running && !state.stopped
        }
        guard starting else { return }
        let thread = Thread { [self] in run() }
        thread.name = "outbox-\(channel.rawValue)"
        thread.start()
    }

    /// An event was written: look now rather than at the next poll.
    package func nudge() {
        condition.withLock {
            state.withLock { $0.nudged = true }
            condition.signal()
        }
    }

    package func stop() {
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
                    _ = condition.wait(until: Date().addingTimeInterval(schedule.pollInterval))
                }
                state.withLock { $0.nudged = false }
            }
        }
        finished.signal()
    }

    /// One pass: claims the due events and attempts each once. Returns how many it claimed.
    @discardableResult
    package func deliverDue() -> Int {
        let claimed: [ClaimedEvent]
        do {
            // The lease outlasts the batch's attempts, so no other instance takes one meanwhile;
            // if this process dies mid-attempt, the events are due again when it ends.
            claimed = try store.claimDueEvents(channel: channel, at: clock.now, limit: schedule.batch,
                                               lease: Double(schedule.batch) * (schedule.attemptTimeout + 1) + 4)
        } catch {
            logger.warning("Outbox unavailable", metadata: ["channel": "\(channel.rawValue)", "error": "\(error)"])
            return 0
        }
        for event in claimed { attempt(event) }
        return claimed.count
    }

    private func attempt(_ claimed: ClaimedEvent) {
        let event = claimed.event
        let attempts = claimed.attempts + 1
        let failure: String
        var parkNow = false
        switch courier.deliver(event) {
        case .delivered:
            record { try store.markDelivered(eventID: event.id, attempts: attempts, at: clock.now) }
            metrics.count(channel, .delivered)
            return
        case .retry(let reason):
            failure = reason
        case .refused(let reason):
            failure = reason
            parkNow = true
        }
        let time = clock.now
        if parkNow || time.timeIntervalSince(event.createdAt) >= schedule.retryWindow {
            record { try store.park(eventID: event.id, attempts: attempts, error: failure) }
            metrics.count(channel, .parked)
            logger.warning("Outbox event parked: it will not be sent again", metadata: [
                "channel": "\(channel.rawValue)", "id": "\(event.id)", "type": "\(event.type)",
                "attempts": "\(attempts)", "error": "\(failure)"])
            return
        }
        let delay = min(schedule.maximumRetryDelay, schedule.firstRetryDelay * pow(2, Double(min(attempts - 1, 30))))
        let jittered = delay * Double.random(in: 0.75...1.25)
        record { try store.scheduleRetry(eventID: event.id, attempts: attempts, at: time.addingTimeInterval(jittered), error: failure) }
        metrics.count(channel, .retried)
        logger.info("Outbox event will be retried", metadata: [
            "channel": "\(channel.rawValue)", "id": "\(event.id)", "attempts": "\(attempts)",
            "in_seconds": "\(Int(jittered.rounded()))", "error": "\(failure)"])
    }

    /// Records an outcome; a store that cannot take it leaves the event leased, so it is tried
    /// again when the lease ends (at least once, never lost).
    private func record(_ write: () throws -> Void) {
        do { try write() } catch {
            logger.warning("Outbox outcome not recorded; it will be tried again",
                           metadata: ["channel": "\(channel.rawValue)", "error": "\(error)"])
        }
    }
}

/// Takes one outbox event to where it goes.
package protocol OutboxCourier: Sendable {
    func deliver(_ event: OutboxEvent) -> CourierResult
}

package enum CourierResult: Equatable {
    case delivered
    /// It may pass later (with why it did not now).
    case retry(String)
    /// It never will: park it.
    case refused(String)
}

/// When a channel's events are tried, and for how long.
public struct DeliverySchedule: Sendable {
    /// How long after an event it is still tried.
    public var retryWindow: TimeInterval
    /// The first retry's delay; each next one doubles, up to `maximumRetryDelay`.
    public var firstRetryDelay: TimeInterval
    public var maximumRetryDelay: TimeInterval = 3600
    /// One attempt in all, connecting included.
    public var attemptTimeout: TimeInterval
    /// Events claimed per pass. One: each claim's lease then needs to cover one attempt only,
    /// so an event claimed by a process that died is free again within `attemptTimeout` + 5 s.
    public var batch = 1
    /// How often the outbox is looked at when nothing nudged it.
    public var pollInterval: TimeInterval = 1

    public init(retryWindow: TimeInterval, firstRetryDelay: TimeInterval, attemptTimeout: TimeInterval) {
        self.retryWindow = retryWindow
        self.firstRetryDelay = firstRetryDelay
        self.attemptTimeout = attemptTimeout
    }
}
