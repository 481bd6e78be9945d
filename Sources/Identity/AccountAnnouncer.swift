import Foundation
import SignupDomain
import WebKernel

/// What a change to an account tells the world, written by the change's own transaction: the
/// owner's notice at a proved address (`VerificationMails.accountNotice`, on the account-mail
/// lane) when mail is configured, and the webhook when webhooks are. An unproved address is
/// never mailed: it may be a stranger's.
package struct AccountAnnouncer: Sendable {
    /// The account-mail lane and its words (nil: no mail is configured).
    package let accountMails: OutboxDelivery?
    package let mails: VerificationMails?
    package let webhooks: OutboxDelivery?

    package init(accountMails: OutboxDelivery?, mails: VerificationMails?, webhooks: OutboxDelivery?) {
        self.accountMails = accountMails
        self.mails = accountMails == nil ? nil : mails
        self.webhooks = webhooks
    }

    /// The events to write with the change (none when nothing is configured to carry them).
    package func events(_ notice: AccountNotice?, webhook type: String?, for account: Account, detail: MessageValue = .text(""),
                language: Languages.Language, at date: Date, by actor: OutboxEvent.Actor = .owner,
                clientID: String? = nil) throws -> [OutboxEvent] {
        var events: [OutboxEvent] = []
        if let notice, let mails, account.emailVerifiedAt != nil {
            events.append(try mails.accountNotice(notice, to: account.email, username: account.username, detail: detail,
                                                  language: language, at: date))
        }
        if let type, webhooks != nil { events.append(.accountChange(type, account, at: date, by: actor, clientID: clientID)) }
        return events
    }

    /// Wakes the deliveries once the change (and its events) is stored.
    package func nudge() {
        accountMails?.nudge()
        webhooks?.nudge()
    }
}
