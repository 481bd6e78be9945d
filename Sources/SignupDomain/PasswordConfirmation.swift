/// The two password fields together: what the confirmation rule looks at.
public struct PasswordConfirmation: Sendable, Hashable {
    public var password: String
    public var confirm: String

    public init(password: String, confirm: String) {
        self.password = password
        self.confirm = confirm
    }
}
