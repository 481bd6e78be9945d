import Foundation
import OutsideHTTP
import SignupDomain
import WebKernel

/// Sends webhook events to the operator's receiver as Standard Webhooks
/// (standardwebhooks.com): a JSON body, `webhook-id` (the same on every attempt, so receivers
/// can drop duplicates), `webhook-timestamp` (this attempt's) and `webhook-signature`.
package struct WebhookCourier: OutboxCourier {
    package let settings: WebhookSettings
    private let fetcher: BoundedHTTPFetcher
    private let now: @Sendable () -> Date

    package init(settings: WebhookSettings, now: @escaping @Sendable () -> Date) {
        self.settings = settings
        self.now = now
        // Sequential attempts; no pause after failures (the backoff paces each event).
        fetcher = BoundedHTTPFetcher(
            limits: .init(maxBytes: 64 * 1024, deadline: settings.schedule.attemptTimeout, maxConcurrent: 1,
                          failuresBeforePause: .max, pause: 0),
            headers: ["Content-Type": "application/json", "User-Agent": "LiveSignup"], now: now)
    }

    package func deliver(_ event: OutboxEvent) -> CourierResult {
        let timestamp = Int(now().timeIntervalSince1970)
        let headers = [
            "webhook-id: \(event.id)", "webhook-timestamp: \(timestamp)",
            "webhook-signature: \(settings.secret.signature(id: event.id, timestamp: timestamp, body: event.body))",
        ]
        do {
            _ = try fetcher.post(settings.url, body: Array(event.body.utf8), headers: headers)
            return .delivered
        } catch {
            let failure = "\(settings.url.host ?? "the receiver") \(error)"
            // The receiver said no: sending it again cannot help.
            if case .status(let code) = error, (400...499).contains(code), code != 408, code != 429 { return .refused(failure) }
            return .retry(failure)
        }
    }
}

/// Where webhooks go and how they are retried (`--webhook-url` and friends).
public struct WebhookSettings: Sendable {
    public var url: URL
    public var secret: WebhookSecret
    public var schedule = DeliverySchedule(retryWindow: 24 * 3600, firstRetryDelay: 5, attemptTimeout: 10)

    /// How long after an event it is still tried.
    public var retryWindow: TimeInterval {
        get { schedule.retryWindow }
        set { schedule.retryWindow = newValue }
    }

    /// The first retry's delay; each next one doubles, up to an hour.
    public var firstRetryDelay: TimeInterval {
        get { schedule.firstRetryDelay }
        set { schedule.firstRetryDelay = newValue }
    }

    public init(url: URL, secret: WebhookSecret) {
        self.url = url
        self.secret = secret
    }
}
