import Foundation
import Identity
import SignupDomain
import WebKernel

/// What must reach the outside, through the store's durable outbox: webhooks, the mails
/// that prove addresses, and mails about existing accounts on their own lane.
struct OutboxServices: Sendable {
    let webhooks: OutboxDelivery?
    /// Proofs of addresses and the mail outbox they write to, when addresses are proved.
    let proofs: AddressProofs?
    let mails: OutboxDelivery?
    /// Mails about existing accounts (recovery, notices), delivered on their own lane.
    let accountMails: OutboxDelivery?

    init(_ core: Services.Core, _ site: SiteServices) throws {
        let configuration = core.configuration, store = core.store, now = core.now
        let metrics = core.metrics.outboxes, logger = core.logger, clock = core.clock
        webhooks = configuration.webhooks.map {
            OutboxDelivery(channel: .webhook, schedule: $0.schedule, courier: WebhookCourier(settings: $0, now: now),
                           store: store, metrics: metrics, logger: logger, clock: clock)
        }
        guard let settings = configuration.emailVerification else {
            (mails, accountMails, proofs) = (nil, nil, nil)
            return
        }
        // Proofs of addresses: their keys are the store's, so every instance checks the codes
        // and opens the mails the others made.
        let sealingKey = try core.key(configuration.mailSealingKey, named: "mail-outbox-key", saying: "mail sealing",
                                      length: VerificationSecrets.keyLength, make: VerificationSecrets.makeKey)
        let codeKey = try core.key(configuration.verificationCodeKey, named: "verification-code-key",
                                   saying: "verification code", length: VerificationSecrets.keyLength,
                                   make: VerificationSecrets.makeKey)
        func delivery(_ channel: OutboxChannel) -> OutboxDelivery {
            OutboxDelivery(channel: channel, schedule: settings.mail.schedule,
                           courier: MailCourier(settings: settings.mail, key: sealingKey, now: now),
                           store: store, metrics: metrics, logger: logger, clock: clock)
        }
        let mails = delivery(.mail)
        self.mails = mails
        accountMails = delivery(.accountMail)
        proofs = AddressProofs(
            settings: settings, store: store, secrets: VerificationSecrets(key: codeKey),
            mails: VerificationMails(renderer: site.renderer, settings: settings,
                                     linkOrigin: site.ownOrigin(wildcardAs: "localhost"), sealingKey: sealingKey),
            limiters: site.limiters, delivery: mails, now: now)
    }

    /// The outboxes this app delivers from.
    var deliveries: [OutboxDelivery] { [webhooks, mails, accountMails].compactMap { $0 } }
}
