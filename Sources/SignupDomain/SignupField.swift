/// The four inputs of the sign-up form. Raw values are the form field names of the protocol.
public enum SignupField: String, CaseIterable, Sendable, Hashable, Codable {
    case username
    case email
    case password
    case confirm

    public var label: String {
        switch self {
        case .username: return "Username"
        case .email: return "Email"
        case .password: return "Password"
        case .confirm: return "Confirm password"
        }
    }

    /// Passwords are secrets: never echoed back, logged, stored in plain text or sent in events.
    public var isSecret: Bool {
        self == .password || self == .confirm
    }
}
