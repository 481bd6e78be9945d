import Foundation
import Identity
import Metrics
import SignupDomain

/// What operators read of the outbox: each delivery attempt's outcome by channel, and each
/// channel's backlog at scrape time. Names and labels are a public contract (docs/OPERATIONS.md, "Metrics").
package final class OutboxMetrics: Sendable {
    package init() {}

    /// What became of one outbox attempt.
    package enum DeliveryOutcome {
        case delivered, retried, parked
    }

    /// Attempts by channel and outcome: `livesignup_webhooks_total{result=delivered|retried|parked}`
    /// `livesignup_mails_total{result=sent|retried|failed}` and the same for account mails
    /// (recovery), `livesignup_account_mails_total`.
    private let deliveryOutcomes: [OutboxChannel: [DeliveryOutcome: Counter]] = [
        .webhook: [.delivered: Counter(label: "livesignup_webhooks_total", dimensions: [("result", "delivered")]),
                   .retried: Counter(label: "livesignup_webhooks_total", dimensions: [("result", "retried")]),
                   .parked: Counter(label: "livesignup_webhooks_total", dimensions: [("result", "parked")])],
        .mail: [.delivered: Counter(label: "livesignup_mails_total", dimensions: [("result", "sent")]),
                .retried: Counter(label: "livesignup_mails_total", dimensions: [("result", "retried")]),
                .parked: Counter(label: "livesignup_mails_total", dimensions: [("result", "failed")])],
        .accountMail: [.delivered: Counter(label: "livesignup_account_mails_total", dimensions: [("result", "sent")]),
                       .retried: Counter(label: "livesignup_account_mails_total", dimensions: [("result", "retried")]),
                       .parked: Counter(label: "livesignup_account_mails_total", dimensions: [("result", "failed")])],
        .backchannelLogout: [
            .delivered: Counter(label: "livesignup_backchannel_logouts_total", dimensions: [("result", "delivered")]),
            .retried: Counter(label: "livesignup_backchannel_logouts_total", dimensions: [("result", "retried")]),
            .parked: Counter(label: "livesignup_backchannel_logouts_total", dimensions: [("result", "parked")]),
        ],
    ]
    /// Each channel's outbox at scrape time (`record`): pending, parked (failed for
    /// good) and the age of the oldest pending event.
    private let outboxGauges: [OutboxChannel: (pending: Gauge, parked: Gauge, oldest: Gauge)] = [
        .webhook: (Gauge(label: "livesignup_webhooks_pending"), Gauge(label: "livesignup_webhooks_parked"),
                   Gauge(label: "livesignup_webhooks_oldest_pending_seconds")),
        .mail: (Gauge(label: "livesignup_mails_pending"), Gauge(label: "livesignup_mails_failed"),
                Gauge(label: "livesignup_mails_oldest_pending_seconds")),
        .accountMail: (Gauge(label: "livesignup_account_mails_pending"), Gauge(label: "livesignup_account_mails_failed"),
                       Gauge(label: "livesignup_account_mails_oldest_pending_seconds")),
        .backchannelLogout: (Gauge(label: "livesignup_backchannel_logouts_pending"), Gauge(label: "livesignup_backchannel_logouts_parked"),
                             Gauge(label: "livesignup_backchannel_logouts_oldest_pending_seconds")),
    ]

    package func count(_ channel: OutboxChannel, _ outcome: DeliveryOutcome) {
        deliveryOutcomes[channel]?[outcome]?.increment()
    }

    package func record(_ channel: OutboxChannel, _ status: OutboxStatus, now: Date) {
        guard let gauges = outboxGauges[channel] else { return }
        gauges.pending.record(status.pending)
        gauges.parked.record(status.parked)
        gauges.oldest.record(status.oldestPendingCreatedAt.map { max(0, now.timeIntervalSince($0)) } ?? 0)
    }
}
