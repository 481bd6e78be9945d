/// The full form state the server sends first on every events connection. A consumer can
/// rebuild everything from it, which is why a reconnect needs no replay.
public struct SignupSnapshot: Decodable, Equatable, Sendable {
    /// The number of the latest edit this state reflects.
    public var rev: Int
    /// Requirement id (e.g. "username.length") to state.
    public var requirements: [String: RequirementState]
    /// Field name to its visible message ("" when hidden).
    public var messages: [String: String]
    public var strength: PasswordStrength
    /// Flattened from `"submit":{"enabled":…}`: the nesting carries no other information yet.
    public var submitEnabled: Bool

    public init(
        rev: Int,
        requirements: [String: RequirementState],
        messages: [String: String],
        strength: PasswordStrength,
        submitEnabled: Bool
    ) {
        self.rev = rev
        self.requirements = requirements
        self.messages = messages
        self.strength = strength
        self.submitEnabled = submitEnabled
    }

    private enum CodingKeys: String, CodingKey {
        case rev, requirements, messages, strength, submit
    }

    private enum SubmitKeys: String, CodingKey {
        case enabled
    }

    // Hand-written only to flatten `submit.enabled`; unknown keys are ignored as usual.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        rev = try container.decode(Int.self, forKey: .rev)
        requirements = try container.decode([String: RequirementState].self, forKey: .requirements)
        messages = try container.decode([String: String].self, forKey: .messages)
        strength = try container.decode(PasswordStrength.self, forKey: .strength)
        let submit = try container.nestedContainer(keyedBy: SubmitKeys.self, forKey: .submit)
        submitEnabled = try submit.decode(Bool.self, forKey: .enabled)
    }
}
