import Identity
import WebKernel

/// The account's changes that wait for a recent sign-in, and where each continues once the
/// person has confirmed. A new change behind a recent sign-in adds its own here.
extension SignInContinuation {
    static let password = SignInContinuation("password", path: "/account/password")
    static let email = SignInContinuation("email", path: "/account/email")
    static let secondFactor = SignInContinuation("second-factor", path: "/account/second-factor")
    static let delete = SignInContinuation("delete", path: "/account/delete")
    static let export = SignInContinuation("export", path: "/account/export")
    static let passkeys = SignInContinuation("passkeys", path: "/account#passkeys")
    static let providers = SignInContinuation("providers", path: "/account#providers")

    /// Every one a form or a link may name.
    static let declared = [account, password, email, secondFactor, delete, export, passkeys, providers]

    /// The declared one of that name; nil for anything else.
    init?(rawValue: String) {
        guard let found = Self.declared.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = found
    }
}
