import Foundation
import Logging
import SignupDomain
import WebKernel

/// An account's links to OpenID providers as every flow needs them: a link made (with its
/// security event, webhook and count), and the identity a provider vouched for that waits in
/// this browser until the account with its proved address signs in (any way in: a password,
/// then any second factor). Built once; the login and settings flows share it
/// instead of holding each other's handlers.
package struct ProviderLinker: Sendable {
    /// The configured providers by id.
    package let providers: [String: ConfiguredProvider]
    package let store: any AccountStore
    package let cookies: ProviderCookies
    package let announcer: AccountAnnouncer
    /// Counts an outcome by provider (`livesignup_provider_signins_total{provider,result}`).
    package let count: @Sendable (_ provider: String, _ outcome: String) -> Void
    package let logger: Logger
    package let now: @Sendable () -> Date

    package init(providers: [String: ConfiguredProvider], store: any AccountStore, cookies: ProviderCookies, announcer: AccountAnnouncer,
         count: @escaping @Sendable (_ provider: String, _ outcome: String) -> Void, logger: Logger,
         now: @escaping @Sendable () -> Date) {
        self.providers = providers
        self.store = store
        self.cookies = cookies
        self.announcer = announcer
        self.count = count
        self.logger = logger
        self.now = now
    }

    /// Links `link` to `account` with its security event and webhook, told and counted.
    package func link(_ link: NewProviderLink, _ provider: ConfiguredProvider, to account: Account, _ request: RequestContext) throws {
        let time = now()
        let events = try announcer.events(.providerLinked, webhook: "account.provider_linked", for: account, detail: .name(provider.name),
                                          language: request.language, at: time)
        try store.linkProvider(link, toAccount: account.id, at: time, events: events)
        announcer.nudge()
        count(provider.id, "linked")
        logger.notice("A provider linked to an account", metadata: ["event": "provider_linked", "provider": "\(provider.id)",
                                                                    "account": "\(account.id)", "client": "\(request.client)"])
    }

    /// After a sign-in to an account (password, then any second factor): the identity this
    /// browser brought from a provider whose address the account has is linked now. Returns
    /// the cookie that clears it, or nothing when there was none.
    package func finishPending(for account: Account, _ request: RequestContext) -> [String] {
        guard let identity = cookies.identity(in: request.http, for: .link), let provider = providers[identity.provider] else {
            return []
        }
        // Only the account the identity was offered to: the one whose proved address it has.
        // Another account signing in in this browser meanwhile links nothing (and the
        // identity waits no longer: it was for someone else).
        guard account.emailVerifiedAt != nil,
              EmailAddress.canonical(account.email) == EmailAddress.canonical(identity.email) else {
            logger.notice("A provider's identity waiting for another account was not linked",
                          metadata: ["provider": "\(identity.provider)", "account": "\(account.id)"])
            return [cookies.identityCookie(nil)]
        }
        let link = NewProviderLink(provider: identity.provider, issuer: identity.issuer, subject: identity.subject,
                                   email: identity.email)
        do {
            try self.link(link, provider, to: account, request)
        } catch {
            // Linked elsewhere meanwhile, or the store failed: the sign-in stands, the link does not.
            logger.notice("A provider's identity was not linked after the sign-in",
                          metadata: ["provider": "\(identity.provider)", "account": "\(account.id)", "error": "\(error)"])
        }
        return [cookies.identityCookie(nil)]
    }

    /// What the sign-in page says while a provider's identity waits for it: sign in to link.
    package func pendingNotice(_ request: RequestContext) -> String? {
        guard let identity = cookies.identity(in: request.http, for: .link), let provider = providers[identity.provider] else {
            return nil
        }
        return request.text("provider.link_lead", ["provider": .name(provider.name), "email": .name(identity.email)])
    }
}
