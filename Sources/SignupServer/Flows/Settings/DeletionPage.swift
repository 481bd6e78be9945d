import Foundation
import Identity
import SignupDomain
import WebKernel

/// `/account/delete`: what deleting the account will end, and the field where its
/// username is typed to confirm.
struct DeletionPage {
    var username: String
    var sessions: Int
    var passkeys: Int
    /// The labels of the profile fields the account has values for.
    var profileFields: [String]
    var error: String?
    /// How long the username stays kept from new accounts.
    var reservedDays: Int
}

extension DeletionPage: PageView {
    static let template = "account-delete"

    func fill(_ context: inout PageContext) {
        let page = self, language = context.language, assets = context.assets
        let text = context.text
        let title = text("account.delete_title")
        context["pageTitle"] = context.title(title, failed: page.error != nil)
        context["heading"] = title
        context["username"] = page.username
        context["hasError"] = page.error != nil
        context["errorMessage"] = page.error ?? ""
        context["confirmField"] = AccountChangeRoutes.confirmUsernameField
        // Each line on its own: the sessions' count is kept current by the page's stream.
        context["sessionsLine"] = text("account.delete_sessions").filled(["n": .number(page.sessions)], in: language)
        context["passkeysLine"] = text("account.delete_passkeys").filled(["n": .number(page.passkeys)], in: language)
        context["profileLine"] = page.profileFields.isEmpty ? "" : text("account.delete_profile", ["fields": .text(MessageFormat.list(page.profileFields, language: language.tag))])
        context["accountScriptURL"] = assets.url(for: "account.js")
        context["typeLabelHTML"] = text.html("account.delete_type_label", ["username": .name(page.username)])
        context["reserved"] = text("account.delete_reserved").filled(["days": .number(page.reservedDays)], in: language)
    }
}
