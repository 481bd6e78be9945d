/// Where `POST /account/confirm` leads once the person has confirmed who they are: the change
/// that asked for a recent sign-in (`/account?continue=password`). A row behind a recent
/// sign-in names one (`Route(recentSignIn:)`); the flow that owns the change declares it
/// beside its pages (Flows/Settings/SignInContinuations.swift), and only a declared one is
/// followed: anything else posted leads to the account page.
package struct SignInContinuation: Hashable, Sendable {
    /// Its name in the form field and the query (`continue=password`).
    package let rawValue: String
    /// The page the confirmation leads to.
    package let path: String

    package init(_ rawValue: String, path: String) {
        self.rawValue = rawValue
        self.path = path
    }

    /// The account page itself, where the confirmation is asked for.
    package static let account = SignInContinuation("account", path: "/account")

    /// The form field (and query parameter) that carries it.
    package static let field = "continue"
}
