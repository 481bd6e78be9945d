import Dispatch
import Foundation
import Identity
import Logging
import MicroHTTPD
import OpenIDConnect
import SignupDomain
import WebKernel

extension ProviderRoutes {
    // MARK: Unlinking

    /// `POST /account/providers/unlink` (a recent sign-in).
    func unlink(_ request: RequestContext, page: (RequestContext, Account, String?, HTTPStatus) -> HTTPResponse) -> HTTPResponse {
        guard case .account(let account) = request.signedIn else { return expired(request, provider: nil) }
        let issuer = request.form["issuer"] ?? "", subject = request.form["subject"] ?? ""
        do {
            guard let existing = try store.providerLinks(ofAccount: account.id).first(where: { $0.issuer == issuer && $0.subject == subject })
            else { return page(request, account, request.text("provider.error.unknown"), .notFound) }
            let name = providers[existing.provider]?.name ?? existing.provider
            let time = now()
            let events = try announcer.events(.providerUnlinked, webhook: "account.provider_unlinked", for: account, detail: .name(name),
                                              language: request.language, at: time)
            switch try store.unlinkProvider(issuer: issuer, subject: subject, fromAccount: account.id, events: events) {
            case .removed:
                announcer.nudge()
                metrics.provider(existing.provider, "unlinked")
                logger.notice("A provider unlinked from an account", metadata: ["event": "provider_unlinked",
                                                                               "provider": "\(existing.provider)",
                                                                               "account": "\(account.id)", "client": "\(request.client)"])
                return Pages.redirect(to: "/account?provider=unlinked&name=\(existing.provider)" + Self.languageParameter(request)
                                      + "#providers")
            case .lastWayIn:
                return page(request, account, request.text("account.provider_last"), .conflict)
            case .notFound:
                return page(request, account, request.text("provider.error.unknown"), .notFound)
            }
        } catch {
            logger.error("Account store unavailable while unlinking a provider", metadata: ["error": "\(error)"])
            return request.storeUnavailable()
        }
    }
}
