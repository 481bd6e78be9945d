/// The `continue` a closed change names (`/account?continue=password`): where
/// `POST /account/confirm` leads once the person has confirmed. Only these: anything else
/// posted there leads to `/account`.
package enum SignInContinuation: String, CaseIterable, Sendable {
    case account
    case password
    case email
    case secondFactor = "second-factor"
    case delete
    case export
    case passkeys
    case providers

    /// The page the confirmation leads to.
    package var path: String {
        switch self {
        case .account: return "/account"
        case .password: return "/account/password"
        case .email: return "/account/email"
        case .secondFactor: return "/account/second-factor"
        case .delete: return "/account/delete"
        case .export: return "/account/export"
        case .passkeys: return "/account#passkeys"
        case .providers: return "/account#providers"
        }
    }

    /// The form field (and query parameter) that carries it.
    package static let field = "continue"
}
