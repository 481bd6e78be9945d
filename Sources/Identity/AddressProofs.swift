import Foundation
import MicroHTTPD
import Logging
import SignupDomain
import WebKernel

/// Starts and renews the proofs of email addresses: a pending sign-up with its code and link
/// stored as keyed hashes, and its mail written to the outbox in the same transaction. Shared
/// by sign-up (the first code) and `/verify` (new codes).
///
/// An address that already has an account gets the same pending sign-up, page and timing,
/// but hashes no code or link can match, and its mail tells the owner someone tried to sign
/// up with it: the form never says which addresses have accounts.
package struct AddressProofs: Sendable {
    package let settings: EmailVerificationSettings
    package let store: any AccountStore
    package let secrets: VerificationSecrets
    package let mails: VerificationMails
    package let limiters: ClientLimiters
    /// Told when a mail was written, so it leaves now rather than at the next poll.
    package let delivery: OutboxDelivery
    package let now: @Sendable () -> Date

    package init(settings: EmailVerificationSettings, store: any AccountStore, secrets: VerificationSecrets, mails: VerificationMails, limiters: ClientLimiters, delivery: OutboxDelivery, now: @escaping @Sendable () -> Date) {
        self.settings = settings
        self.store = store
        self.secrets = secrets
        self.mails = mails
        self.limiters = limiters
        self.delivery = delivery
        self.now = now
    }

    /// The cookie that binds a pending sign-up to the browser that made it (path `/verify`).
    package static let browserCookie = "livesignup_signup_browser"

    /// The `Set-Cookie` value that binds `formToken`'s pending sign-up to this browser, for
    /// as long as its name may be held.
    package func browserCookie(for formToken: String, secure: Bool) -> String {
        SetCookie(Self.browserCookie, secrets.browserBinding(formToken: formToken), path: "/verify",
                  maxAge: Int(2 * settings.codeLifetime), sameSite: .strict, secure: secure).header
    }

    /// Whether `request` comes from the browser that made `formToken`'s pending sign-up.
    package func isFromTheBrowserThatSignedUp(_ request: HTTPRequest, formToken: String) -> Bool {
        request.cookieValues(named: Self.browserCookie).contains { secrets.isBrowserBinding($0, formToken: formToken) }
    }

    /// Spends one mail from the recipient's and the client's allowances, or says when one
    /// may be sent again. Asked before the password is hashed, so a refused sign-up costs no
    /// hash.
    package func admitMail(to address: String, client clientKey: String) throws(LimitExceeded) {
        try limiters.mailsPerAddress.admit(clientKey)
        try limiters.mailsPerRecipient.admit(EmailAddress.canonical(address))
    }

    /// Stores the pending sign-up and its mail. Throws `AccountCreationError` (name taken
    /// meanwhile, form used) or a store error.
    package func start(username: String, email: String, passwordHash: String, profile: [String: ProfileValue], formToken: String,
               language: Languages.Language, returnTo: String?, passkey: NewPasskey? = nil, ranJavaScript: Bool = false) throws {
        let time = now()
        let proof = try makeProof(for: email, formToken: formToken, language: language, at: time)
        let pending = PendingSignup.starting(
            formToken: formToken, username: username, email: email, passwordHash: passwordHash, profile: profile,
            language: language.tag, returnTo: returnTo ?? "", codeHash: proof.codeHash, linkHash: proof.linkHash,
            at: time, lifetime: settings.codeLifetime, passkey: passkey, ranJavaScript: ranJavaScript)
        try store.startPendingSignup(pending, mail: proof.mail, at: time)
        delivery.nudge()
    }

    /// A new code and link for `pending` (the old ones stop working). False when it is gone.
    package func renew(_ pending: PendingSignup, language: Languages.Language) throws -> Bool {
        let time = now()
        // A name is held for a sign-up at most twice the code's lifetime, however often a new
        // code is asked for: otherwise a new code every few minutes would hold it for ever.
        let expiresAt = min(time.addingTimeInterval(settings.codeLifetime), pending.createdAt.addingTimeInterval(2 * settings.codeLifetime))
        guard expiresAt > time.addingTimeInterval(60) else { return false }
        let proof = try makeProof(for: pending.email, formToken: pending.formToken, language: language, at: time, expiresAt: expiresAt)
        let renewed = try store.replaceCode(formToken: pending.formToken, codeHash: proof.codeHash, linkHash: proof.linkHash,
                                            sentAt: time, expiresAt: expiresAt, mail: proof.mail)
        if renewed { delivery.nudge() }
        return renewed
    }

    /// A code, a link and their mail for `email`; for an address with an account, the notice
    /// instead, and hashes nothing matches.
    private func makeProof(for email: String, formToken: String, language: Languages.Language,
                           at time: Date, expiresAt: Date? = nil) throws -> (codeHash: String, linkHash: String, mail: OutboxEvent) {
        if try store.isEmailTaken(email) {
            return (VerificationSecrets.unmatchableHash(), VerificationSecrets.unmatchableHash(),
                    try mails.addressInUse(to: email, language: language, at: time))
        }
        let code = VerificationSecrets.makeCode()
        let link = VerificationSecrets.makeLinkToken()
        return (secrets.codeHash(code, formToken: formToken), secrets.linkHash(link),
                try mails.verification(to: email, code: code, link: link, language: language, at: time,
                                       expiresAt: expiresAt ?? time.addingTimeInterval(settings.codeLifetime)))
    }
}
