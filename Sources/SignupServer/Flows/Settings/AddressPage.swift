import Foundation
import Identity
import SignupDomain
import WebKernel

/// The pages of an address change around its live form: the code sent to the new
/// address, and the old address's undo link.
struct AddressPage {
    enum Mode {
        /// The code form; the new address shown masked.
        case code(address: String)
        /// The undo link's page: a button that posts it ("" for a link that is not one).
        /// `link` empty: nothing to undo; otherwise the form posts the secret from its cookie.
        case undo(link: String)
        /// What the undo did: the old address back (every browser signed out), or nothing;
        /// `cleaned`: ways in added since the change were removed too.
        case undone(restored: Bool, cleaned: Bool = false)
    }
    var mode: Mode
    var error: String?
}

extension AddressPage: PageView {
    static let template = "account-email"

    func fill(_ context: inout PageContext) {
        let page = self
        let text = context.text
        let title: String
        switch page.mode {
        case .code(let address):
            title = text("account.email_code_title")
            context["code"] = ["leadHTML": text.html("account.email_code_lead", ["address": .name(EmailAddress.masked(address))]),
                               "field": AccountEmailRoutes.codeField]
        case .undo(let link):
            title = text("account.email_undo_title")
            context["undo"] = !link.isEmpty
            context["message"] = link.isEmpty ? text("account.email_undo_gone") : text("account.email_undo_lead")
        case .undone(let restored, let cleaned):
            title = text(restored ? "account.email_restored_title" : "account.email_undo_title")
            context["message"] = text(restored ? "account.email_restored" : "account.email_undo_gone")
            context["restored"] = restored
            context["cleaned"] = cleaned ? text("account.email_restored_cleaned") : false
        }
        context["pageTitle"] = context.title(title, failed: page.error != nil)
        context["heading"] = title
        context["hasError"] = page.error != nil
        context["errorMessage"] = page.error ?? ""
    }
}

extension SignupPage.AccountForm {
    /// A change of address (`/account/email`): the live form around the new one.
    static func address(username: String, current: String) -> SignupPage.AccountForm {
        SignupPage.AccountForm(username: username, action: "/account/email", sessionURL: "/account/email/session",
                    title: "account.email_title", lead: "account.email_lead", submit: "account.email_submit",
                    currentEmail: current)
    }
}
