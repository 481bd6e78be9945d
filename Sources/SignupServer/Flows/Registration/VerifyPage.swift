import Foundation
import Identity
import SignupDomain
import WebKernel

/// What `/verify` shows: the code form for a pending sign-up (`token`), or the button
/// that confirms a mailed link (`linkToken`).
struct VerifyPage {
    var heading: String
    var lead: String
    var token: String?
    /// The confirmation of a mailed link (its secret is in a cookie, never in the page).
    var confirmsLink = false
    var code = ""
    /// A notice above the form ("We sent a new code").
    var notice = ""
    /// The code field's message (shape, wrong code); also the error summary's entry.
    var fieldError = ""
    /// An error about the page as a whole (too many mails): the summary only.
    var formError = ""
    /// The code form's proof-of-work challenge as JSON, after failures ("" otherwise).
    var challenge = ""
}

extension VerifyPage: PageView {
    static let template = "verify"

    func fill(_ context: inout PageContext) {
        let page = self, language = context.language, assets = context.assets
        let error = page.fieldError.isEmpty ? page.formError : page.fieldError
        context["pageTitle"] = context.title(page.heading, failed: !error.isEmpty)
        context["heading"] = page.heading
        context["lead"] = page.lead
        // Absent, not "", where a section is not shown: Mustache shows one for any string.
        context["token"] = page.token
        // The code page's address carries its sign-up's token: the switcher keeps it.
        if let token = page.token {
            let encoded = token.addingPercentEncoding(withAllowedCharacters: .urlUnreservedCharacters) ?? ""
            context["languageLinks"] = context.renderer.languageLinks(language, query: "token=\(encoded)&")
        }
        context["confirmsLink"] = page.confirmsLink ? true : nil
        context["code"] = page.code
        context["codePattern"] = VerificationCodeShape.pattern
        context["notice"] = page.notice.isEmpty ? nil : page.notice
        context["fieldError"] = page.fieldError.isEmpty ? nil : page.fieldError
        context["hasError"] = !error.isEmpty
        context["errorMessage"] = error
        context["errorTarget"] = page.token == nil ? "confirm" : "code"
        context["scriptURL"] = assets.url(for: "app.js")
        context["hasChallenge"] = !page.challenge.isEmpty
        context["challenge"] = page.challenge
        context["proofWorkerURL"] = assets.url(for: "proof-worker.js")
        context["proofScriptURL"] = assets.url(for: "proof.js")
    }
}
