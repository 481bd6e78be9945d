import Foundation
import Identity
import SignupDomain
import WebKernel

/// What `/recover` shows: the request form (a username or address), or after it the code
/// form (`recoveryToken`), in the same words whether or not an account matched.
struct RecoverPage {
    /// What was typed into the request form.
    var identifier = ""
    /// The recovery the code form is for (the code form is shown when set).
    var recoveryToken: String?
    var code = ""
    /// The field's message (empty, wrong code); also the error summary's entry.
    var fieldError = ""
    /// About the page as a whole (too many requests, a refused proof): the summary only.
    var formError = ""
    /// A proof-of-work challenge (JSON) and the form token it is bound to.
    var proof: (token: String, challenge: String)?
}

extension RecoverPage: PageView {
    static let template = "recover"

    func fill(_ context: inout PageContext) {
        let page = self, assets = context.assets
        let text = context.text
        let heading = page.recoveryToken == nil ? text("recover.title") : text("recover.code_title")
        let error = page.fieldError.isEmpty ? page.formError : page.fieldError
        context["pageTitle"] = context.title(heading, failed: !error.isEmpty)
        context["heading"] = heading
        context["hasError"] = !error.isEmpty
        context["errorMessage"] = error
        context["errorTarget"] = page.recoveryToken == nil ? Self.identifierField : "code"
        // Absent, not "", where a section is not shown: Mustache shows one for any string.
        context["fieldError"] = page.fieldError.isEmpty ? nil : page.fieldError
        context["identifier"] = page.identifier
        context["identifierField"] = Self.identifierField
        context["recoveryToken"] = page.recoveryToken
        context["askForAccount"] = page.recoveryToken == nil ? true : nil
        context["code"] = page.code
        context["codePattern"] = VerificationCodeShape.pattern
        context["scriptURL"] = assets.url(for: "app.js")
        context["hasChallenge"] = page.proof != nil
        context["token"] = page.proof?.token ?? ""
        context["challenge"] = page.proof?.challenge ?? ""
        context["proofWorkerURL"] = assets.url(for: "proof-worker.js")
        context["proofScriptURL"] = assets.url(for: "proof.js")
    }

    /// The request form's one field (`RecoveryRoutes.identifierField`).
    static let identifierField = "identifier"
}

extension SignupPage.AccountForm {
    /// A recovery's new password (`/recover/password`).
    static func recovery(username: String, asksSecondFactorCode: Bool = false, message: String = "") -> SignupPage.AccountForm {
        SignupPage.AccountForm(username: username, action: "/recover/password", sessionURL: "/recover/session",
                    title: "recover.password_title", lead: "recover.password_lead", submit: "recover.password_submit",
                    asksSecondFactorCode: asksSecondFactorCode, secondFactorMessage: message)
    }
}
