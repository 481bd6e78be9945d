import Crypto
import Foundation
import Logging
import OutsideMail
import SignupDomain
import WebKernel

/// How addresses are proved (`--email-verification required`): where mail goes, who sends
/// it, and how long a code lives. Nil in `SignupApplication.Configuration` means off: a valid
/// sign-up creates its account at once.
public struct EmailVerificationSettings: Sendable {
    public var mail: MailSettings
    /// How long a code and its link work, and the username stays held for the sign-up.
    public var codeLifetime: TimeInterval = 30 * 60
    /// How soon after a mail the person may ask for another.
    public var resendCooldown: TimeInterval = 60
    /// Wrong codes before a new one must be sent (a sign-up's and a recovery's alike).
    public var maximumWrongCodes = 5
    /// How long a recovery's code and link work (`--recovery-minutes`).
    public var recoveryLifetime: TimeInterval = 15 * 60

    public init(mail: MailSettings) {
        self.mail = mail
    }
}

/// Where mail goes: a mail server (`--smtp-url`) or a folder of `.eml` files (`--mail-dir`).
public struct MailSettings: Sendable {
    public var transport: any MailTransport
    /// "LiveSignup <noreply@example.org>" (`--mail-from`).
    public var from: String
    /// Mails are retried for a day; a code in one expires sooner, and a mail whose code has
    /// expired is not sent at all.
    public var schedule = DeliverySchedule(retryWindow: 24 * 3600, firstRetryDelay: 5, attemptTimeout: 30)

    public init(transport: any MailTransport, from: String) {
        self.transport = transport
        self.from = from
    }

    /// The domain of the sender's address, for `Message-ID`s.
    package var senderDomain: String { MailMessage.domain(ofMailbox: from) }
}

/// Hands sealed mails from the outbox to the transport, with the operator's sender.
package struct MailCourier: OutboxCourier {
    package let settings: MailSettings
    package let key: [UInt8]
    package let now: @Sendable () -> Date

    package init(settings: MailSettings, key: [UInt8], now: @escaping @Sendable () -> Date) {
        self.settings = settings
        self.key = key
        self.now = now
    }

    package func deliver(_ event: OutboxEvent) -> CourierResult {
        let mail: OutgoingMail
        do {
            mail = try OutgoingMail.unsealed(event, key: SymmetricKey(data: key))
        } catch {
            return .refused("the mail cannot be opened with this store's key: \(error)")
        }
        if let expires = mail.expiresAt, now() >= expires {
            return .refused("its code expired before a mail server took it")
        }
        do {
            var message = mail.message
            message.from = settings.from
            try settings.transport.send(message)
            return .delivered
        } catch {
            return error.isPermanent ? .refused(error.description) : .retry(error.description)
        }
    }
}

/// What an account notice is about (`VerificationMails.accountNotice`); the raw value names
/// its texts and its outbox type (`mail.<value>`).
package enum AccountNotice: String, Sendable, CaseIterable {
    case passwordChanged = "password_changed_here"
    case passkeyAdded = "passkey_added"
    case passkeyRemoved = "passkey_removed"
    case accountDeleted = "account_deleted"
    case accountDisabled = "account_disabled"
    case accountEnabled = "account_enabled"
    case secondFactorEnabled = "second_factor_enabled"
    case secondFactorRemoved = "second_factor_removed"
    case recoveryCodesReplaced = "recovery_codes_replaced"
    /// Wrong codes in a row after the right password: somebody may know the password.
    case secondFactorWrongCodes = "second_factor_wrong_codes"
    /// So many wrong codes in a row that the app's codes are refused until a recovery code.
    case secondFactorLocked = "second_factor_locked"
    case providerLinked = "provider_linked"
    case providerUnlinked = "provider_unlinked"
}

/// Writes the mails that prove addresses, in the person's language, sealed for the outbox.
package struct VerificationMails: Sendable {
    package let renderer: PageRenderer
    package let settings: EmailVerificationSettings
    /// Where links in mails point: the first `--public-origin`, else the listening address.
    /// Read when a mail is written: with `--port 0` the port is known only once listening.
    package let linkOrigin: @Sendable () -> String
    /// Seals mails in the outbox (`mail-outbox-key` in the store).
    package let sealingKey: [UInt8]

    package init(renderer: PageRenderer, settings: EmailVerificationSettings, linkOrigin: @escaping @Sendable () -> String, sealingKey: [UInt8]) {
        self.renderer = renderer
        self.settings = settings
        self.linkOrigin = linkOrigin
        self.sealingKey = sealingKey
    }

    /// The code and the link for a new sign-up.
    package func verification(to address: String, code: String, link: String, language: Languages.Language, at now: Date,
                      expiresAt: Date) throws -> OutboxEvent {
        try codeAndLink(.verification, to: address, username: "", code: code, link: link, language: language, at: now,
                        expiresAt: expiresAt)
    }

    /// For the owner of an address that already has an account: someone tried to sign up
    /// with it (OWASP ASVS V6.3.8); the page they saw said the same as for a new address.
    package func addressInUse(to address: String, language: Languages.Language, at now: Date) throws -> OutboxEvent {
        let content = MailContent(
            subject: text("mail.in_use_subject", language),
            heading: text("mail.in_use_heading", language),
            lead: text("mail.in_use_lead", language),
            code: nil,
            linkLead: text("mail.in_use_signin", language),
            linkURL: "\(linkOrigin())/signin" + PageRenderer.languageQuery(language),
            linkText: text("mail.in_use_signin_text", language),
            after: [text("mail.in_use_ignore", language)],
            footer: text("mail.footer", language))
        return try seal(content, to: address, type: "mail.address_in_use", language: language, at: now, expiresAt: nil)
    }

    /// The code and the link that lead back into an account (`/recover`).
    package func recovery(to address: String, username: String, code: String, link: String, language: Languages.Language,
                  at now: Date, expiresAt: Date) throws -> OutboxEvent {
        try codeAndLink(.recovery, to: address, username: username, code: code, link: link, language: language, at: now,
                        expiresAt: expiresAt)
    }

    /// The two mails that carry a code and a link: their texts (`mail.<prefix>_*`), the route
    /// the link opens, and the outbox lane.
    private struct CodeMail {
        package let prefix: String
        package let path: String
        package let type: String
        package let channel: OutboxChannel
        package static let verification = CodeMail(prefix: "verify", path: "/verify", type: "mail.verification", channel: .mail)
        package static let recovery = CodeMail(prefix: "recover", path: "/recover", type: "mail.recovery", channel: .accountMail)
    }

    private func codeAndLink(_ kind: CodeMail, to address: String, username: String, code: String, link: String,
                             language: Languages.Language, at now: Date, expiresAt: Date) throws -> OutboxEvent {
        func words(_ name: String) -> String { text("mail.\(kind.prefix)_\(name)", language) }
        let minutes = String(Int(expiresAt.timeIntervalSince(now) / 60))
        let content = MailContent(
            subject: language.filled(words("subject"), ["code": .text(code)]),
            heading: words("heading"),
            lead: language.filled(words("lead"), ["username": .name(username)]),
            code: code,
            linkLead: words("link"),
            linkURL: "\(linkOrigin())\(kind.path)?link=\(link)" + (language.tag == Languages.fallback ? "" : "&lang=\(language.tag)"),
            linkText: words("link_text"),
            after: [words("expiry").filled(["minutes": .number(Int(minutes) ?? 0)], in: language), words("ignore")],
            footer: text("mail.footer", language))
        return try seal(content, to: address, type: kind.type, language: language, at: now, expiresAt: expiresAt,
                        channel: kind.channel)
    }

    /// For the owner: the password was changed through a recovery, and what to do if it was
    /// not them.
    package func passwordChanged(to address: String, username: String, language: Languages.Language, at now: Date) throws -> OutboxEvent {
        let content = MailContent(
            subject: text("mail.changed_subject", language),
            heading: text("mail.changed_heading", language),
            lead: language.filled(text("mail.changed_lead", language), ["username": .name(username)]),
            code: nil,
            linkLead: text("mail.changed_not_you", language),
            linkURL: "\(linkOrigin())/recover" + PageRenderer.languageQuery(language),
            linkText: text("mail.changed_not_you_link", language),
            after: [text("mail.changed_sessions", language)],
            footer: text("mail.footer", language))
        return try seal(content, to: address, type: "mail.password_changed", language: language, at: now, expiresAt: nil,
                        channel: .accountMail)
    }

    /// A change the owner made on `/account` (or an operator made to it), told at its
    /// address: what changed and when, where to see the account, and what to do if it was
    /// not them. The texts are `mail.notice_<kind>_subject` and `_lead` ({username},
    /// {detail}: a passkey's name), with the shared `mail.notice_*` words around them.
    package func accountNotice(_ kind: AccountNotice, to address: String, username: String, detail: MessageValue = .text(""),
                       language: Languages.Language, at now: Date) throws -> OutboxEvent {
        func words(_ name: String) -> String { text("mail.notice_\(kind.rawValue)_\(name)", language) }
        // A deleted or disabled account has no page to go to: the link leads to getting back in.
        let leadsToAccount = kind != .accountDeleted && kind != .accountDisabled
        let content = MailContent(
            subject: words("subject"),
            heading: words("subject"),
            lead: language.filled(words("lead"), ["username": .name(username), "detail": detail]),
            code: nil,
            linkLead: text(leadsToAccount ? "mail.notice_see_account" : "mail.notice_questions", language),
            linkURL: "\(linkOrigin())" + (leadsToAccount ? "/account" : "/signin") + PageRenderer.languageQuery(language),
            linkText: text(leadsToAccount ? "mail.notice_see_account_link" : "mail.notice_signin_link", language),
            after: leadsToAccount ? [text("mail.notice_not_you", language)] : [],
            footer: text("mail.footer", language))
        return try seal(content, to: address, type: "mail.\(kind.rawValue)", language: language, at: now, expiresAt: nil,
                        channel: .accountMail)
    }

    /// The code that proves a new address of an existing account (`/account/email`); no
    /// link: the person is signed in on the page that asks for it.
    package func emailChangeCode(to address: String, username: String, code: String, language: Languages.Language, at now: Date,
                         expiresAt: Date) throws -> OutboxEvent {
        let minutes = String(Int(expiresAt.timeIntervalSince(now) / 60))
        let content = MailContent(
            subject: language.filled(text("mail.email_change_subject", language), ["code": .text(code)]),
            heading: text("mail.email_change_heading", language),
            lead: language.filled(text("mail.email_change_lead", language), ["username": .name(username)]),
            code: code,
            linkLead: text("mail.email_change_page", language),
            linkURL: "\(linkOrigin())/account/email/code" + PageRenderer.languageQuery(language),
            linkText: text("mail.email_change_page_link", language),
            after: [text("mail.email_change_expiry", language).filled(["minutes": .number(Int(minutes) ?? 0)], in: language),
                    text("mail.email_change_ignore", language)],
            footer: text("mail.footer", language))
        return try seal(content, to: address, type: "mail.email_change", language: language, at: now, expiresAt: expiresAt,
                        channel: .accountMail)
    }

    /// For the owner of an address another account has proved: someone tried to move an
    /// account to it; nothing changed. The page they saw read as for a free address.
    package func addressClaimed(to address: String, language: Languages.Language, at now: Date) throws -> OutboxEvent {
        let content = MailContent(
            subject: text("mail.address_claimed_subject", language),
            heading: text("mail.address_claimed_subject", language),
            lead: text("mail.address_claimed_lead", language),
            code: nil,
            linkLead: text("mail.notice_see_account", language),
            linkURL: "\(linkOrigin())/account" + PageRenderer.languageQuery(language),
            linkText: text("mail.notice_see_account_link", language),
            after: [],
            footer: text("mail.footer", language))
        return try seal(content, to: address, type: "mail.address_claimed", language: language, at: now, expiresAt: nil,
                        channel: .accountMail)
    }

    /// For the old address once a new one is proved: what happened, and the link that undoes
    /// it for `days` (it brings the old address back and signs every browser out).
    package func emailChanged(to oldAddress: String, username: String, newAddress: String, undoLink: String, days: Int,
                      language: Languages.Language, at now: Date) throws -> OutboxEvent {
        let content = MailContent(
            subject: text("mail.email_changed_subject", language),
            heading: text("mail.email_changed_subject", language),
            lead: language.filled(text("mail.email_changed_lead", language), ["username": .name(username), "email": .name(newAddress)]),
            code: nil,
            linkLead: text("mail.email_changed_undo", language).filled(["days": .number(days)], in: language),
            linkURL: "\(linkOrigin())/account/email/undo?link=\(undoLink)" + (language.tag == Languages.fallback ? "" : "&lang=\(language.tag)"),
            linkText: text("mail.email_changed_undo_link", language),
            after: [text("mail.email_changed_fine", language)],
            footer: text("mail.footer", language))
        return try seal(content, to: oldAddress, type: "mail.email_changed", language: language, at: now, expiresAt: nil,
                        channel: .accountMail)
    }

    private func seal(_ content: MailContent, to address: String, type: String, language: Languages.Language,
                      at now: Date, expiresAt: Date?, channel: OutboxChannel = .mail) throws -> OutboxEvent {
        let parts = renderer.render(content, language: language)
        let mail = OutgoingMail(
            message: MailMessage(from: "", to: address, subject: content.subject, text: parts.text, html: parts.html,
                                 messageID: OutgoingMail.makeMessageID(domain: settings.mail.senderDomain), date: now,
                                 language: language.tag),
            expiresAt: expiresAt)
        return try mail.sealed(type: type, key: SymmetricKey(data: sealingKey), channel: channel)
    }

    /// A text of the mail's language, the service's name filled in (isolated for direction:
    /// FSI…PDI, which plain-text mail and every HTML mail client keep).
    private func text(_ key: String, _ language: Languages.Language) -> String {
        language.text(key, service: renderer.serviceName)
    }
}
