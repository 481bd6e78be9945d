import Foundation
import Identity
import SignupDomain
import WebKernel

/// `/signin`: the username and password form, the passkey button, the providers.
struct SignInPage: PageView {
    static let template = "signin"
    var username: String
    var errorMessage: String?
    var returnTo: String?
    /// The form token and challenge (JSON) when this client must pay a proof of work to sign
    /// in (after failed sign-ins).
    var proof: (token: String, challenge: String)?
    /// "Forgot your password?" leads to `/recover` (mail can be sent).
    var offersRecovery = false
    /// A provider's identity waiting for this sign-in (issue 45): what signing in does.
    var notice: String?

    func fill(_ context: inout PageContext) {
        let language = context.language, assets = context.assets
        context["offersRecovery"] = offersRecovery
        context["notice"] = notice ?? ""
        context["passkeyScriptURL"] = assets.url(for: "passkey.js")
        context["hasChallenge"] = proof != nil
        context["token"] = proof?.token ?? ""
        context["challenge"] = proof?.challenge ?? ""
        context["proofWorkerURL"] = assets.url(for: "proof-worker.js")
        context["proofScriptURL"] = assets.url(for: "proof.js")
        context["returnTo"] = returnTo ?? ""
        context["signupQuery"] = PageRenderer.query(languageQuery: PageRenderer.languageQuery(language), returnTo: returnTo)
        context["pageTitle"] = context.title(context.text("signin.title"), failed: errorMessage != nil)
        context["username"] = username
        context["hasError"] = errorMessage != nil
        context["errorMessage"] = errorMessage ?? ""
    }
}

/// `/welcome`: who is signed in, and the offer of a passkey.
struct WelcomePage: PageView {
    static let template = "welcome"
    var username: String
    /// How many passkeys the account has (nil when the store could not say: nothing shown).
    var passkeys: Int?

    func fill(_ context: inout PageContext) {
        let text = context.text
        context["pageTitle"] = text("welcome.title")
        context["headingHTML"] = text.html("welcome.heading", ["name": .name(username)])
        context["passkeyScriptURL"] = context.assets.url(for: "passkey.js")
        context["passkeys"] = passkeys ?? -1
        context["hasPasskeys"] = (passkeys ?? 0) > 0
        context["passkeyCount"] = text("welcome.passkey_count").filled(["count": .number(passkeys ?? 0)], in: context.language)
    }
}
