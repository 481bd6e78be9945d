import Foundation
import Identity
import SignupDomain
import WebKernel

/// The second factor's pages (issue 44): its setup, its state, recovery codes shown once,
/// and the sign-in's code step.
struct SecondFactorPage {
    enum Mode {
        /// A new secret: its QR code (SVG), its key as typed, its otpauth URI, where its
        /// first code is posted (`/account/second-factor`, or `/signin/second-factor` when
        /// the policy requires one before any session).
        case setup(qr: String, key: String, uri: String, action: String)
        case enabled(codesLeft: Int)
        /// Recovery codes, shown this once, and where to go on.
        case codes([String], next: String)
        /// The sign-in's step after the right password.
        case signIn
    }
    var mode: Mode
    var error: String?
}

extension SecondFactorPage: PageView {
    static let template = "second-factor"

    func fill(_ context: inout PageContext) {
        let page = self, language = context.language, assets = context.assets
        let text = context.text
        let title: String
        context["codeField"] = SecondFactorRoutes.codeField
        switch page.mode {
        case .setup(let qr, let key, let uri, let action):
            title = text("second_factor.setup_title")
            context["setup"] = ["qr": qr, "key": key, "uri": uri, "action": action,
                                "required": action.hasPrefix("/signin") ? text("second_factor.required_lead") : ""]
        case .enabled(let left):
            title = text("second_factor.on_title")
            context["enabled"] = ["codesLeft": text("second_factor.codes_left").filled(["n": .number(left)], in: language)]
        case .codes(let codes, let next):
            title = text("second_factor.codes_title")
            context["codes"] = ["list": codes, "next": next]
        case .signIn:
            title = text("second_factor.signin_title")
            context["signIn"] = true
        }
        context["pageTitle"] = context.title(title, failed: page.error != nil)
        context["heading"] = title
        context["hasError"] = page.error != nil
        context["errorMessage"] = page.error ?? ""
        context["scriptURL"] = assets.url(for: "second-factor.js")
    }
}
