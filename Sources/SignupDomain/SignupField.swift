/// A field of the sign-up form, by its protocol name (the form field name the page posts,
/// the `field` of `POST /fields`, the key of the snapshot's `messages`).
///
/// The form's fields are data: a policy declares them (`FieldDeclaration`, in page order).
/// Four are built in because the account needs them; an operator adds others in the policy
/// file. The constants name the built-in four.
public struct SignupField: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    /// The name's hash, computed once: every edit looks fields up in dictionaries and sets
    /// (touched fields, verdicts, sequence numbers), and hashing the name each time cost
    /// 1.4 % of the domain's instructions per edit (Benchmarks/EditPath under callgrind).
    private let nameHash: Int

    public init(rawValue: String) {
        self.rawValue = rawValue
        nameHash = rawValue.hashValue
    }

    public static func == (lhs: SignupField, rhs: SignupField) -> Bool {
        lhs.nameHash == rhs.nameHash && lhs.rawValue == rhs.rawValue
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(nameHash)
    }

    public static let username = SignupField(rawValue: "username")
    public static let email = SignupField(rawValue: "email")
    public static let password = SignupField(rawValue: "password")
    public static let confirm = SignupField(rawValue: "confirm")

    /// Not a field of the policy: the one step that replaces the password fields when the
    /// person signs up with a passkey. Its message slot and error-summary link carry this name.
    public static let passkey = SignupField(rawValue: "passkey")

    /// The fields every account needs, in the presets' page order.
    public static let builtIn: [SignupField] = [.username, .email, .password, .confirm]

    /// Passwords are secrets: never echoed back, logged, stored in plain text or sent in events.
    public var isSecret: Bool {
        self == .password || self == .confirm
    }

    public var description: String { rawValue }
}
