import FormWire

/// The full form state the server sends first on every events connection. A consumer can
/// rebuild everything from it, which is why a reconnect needs no replay.
public struct SignupSnapshot: Codable, Equatable, Sendable {
    /// The number of the latest edit this state reflects.
    public var rev: Int
    /// Requirement id (e.g. "username.length") to state.
    public var requirements: [String: RequirementState]
    /// Field name to its visible message ("" when hidden).
    public var messages: [String: String]
    public var strength: PasswordStrength
    /// Flattened from `"submit":{"enabled":…}`: the nesting carries no other information yet.
    public var submitEnabled: Bool
    /// The session's language (`"lang"`, a BCP 47 tag): every text in the stream is in it.
    /// Nil from servers that predate languages.
    public var language: String?
    /// Field name to a likely correction of its value ("Did you mean …?"): only fields that
    /// have one. Empty from servers that predate suggestions.
    public var suggestions: [String: String]
    /// Password or passkey: which credential's checklist `requirements` holds. `password`
    /// from servers that predate passkeys.
    public var credential: CredentialMethod

    public init(
        rev: Int,
        requirements: [String: RequirementState],
        messages: [String: String],
        strength: PasswordStrength,
        submitEnabled: Bool,
        language: String? = nil,
        suggestions: [String: String] = [:],
        credential: CredentialMethod = .password
    ) {
        self.credential = credential
        self.language = language
        self.suggestions = suggestions
        self.rev = rev
        self.requirements = requirements
        self.messages = messages
        self.strength = strength
        self.submitEnabled = submitEnabled
    }

    private enum CodingKeys: String, CodingKey {
        case rev, requirements, messages, strength, submit, suggestions, credential
        case language = "lang"
    }

    private enum SubmitKeys: String, CodingKey {
        case enabled
    }

    /// What changed from `previous` to `self`, as events carrying `self.rev`, in the
    /// protocol's order: the credential (first, so a page swaps its checklist before the new
    /// one's states arrive), requirements (in `requirementOrder`; only those `self` holds),
    /// messages (in `fieldOrder`), suggestions (in `fieldOrder`; "" when one went away),
    /// strength, submit. Nothing unchanged is sent again.
    public func changes(since previous: SignupSnapshot, requirementOrder: [String], fieldOrder: [String]) -> [SignupEvent] {
        var events: [SignupEvent] = []
        if credential != previous.credential { events.append(.credential(credential, rev: rev)) }
        for id in requirementOrder {
            if let state = requirements[id], state != previous.requirements[id] {
                events.append(.requirement(id: id, state: state, rev: rev))
            }
        }
        for field in fieldOrder {
            let text = messages[field] ?? ""
            if text != previous.messages[field] ?? "" {
                events.append(.message(field: field, text: text, rev: rev))
            }
        }
        if suggestions != previous.suggestions {
            for field in fieldOrder where suggestions[field] != previous.suggestions[field] {
                events.append(.suggestion(field: field, value: suggestions[field] ?? "", rev: rev))
            }
        }
        if strength != previous.strength { events.append(.strength(strength, rev: rev)) }
        if submitEnabled != previous.submitEnabled { events.append(.submit(enabled: submitEnabled, rev: rev)) }
        return events
    }

    /// The snapshot event's payload, keys sorted, written directly (see `JSONWriter`).
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("credential"); json.string(credential.rawValue)
        if let language { json.key("lang"); json.string(language) }
        json.key("messages")
        json.beginObject()
        for field in messages.keys.sorted() {
            json.key(field); json.string(messages[field] ?? "")
        }
        json.endObject()
        json.key("requirements")
        json.beginObject()
        for id in requirements.keys.sorted() {
            json.key(id); json.string(requirements[id]?.rawValue ?? "")
        }
        json.endObject()
        json.key("rev"); json.int(rev)
        json.key("strength"); strength.write(to: &json)
        json.key("submit")
        json.beginObject()
        json.key("enabled"); json.bool(submitEnabled)
        json.endObject()
        json.key("suggestions")
        json.beginObject()
        for field in suggestions.keys.sorted() {
            json.key(field); json.string(suggestions[field] ?? "")
        }
        json.endObject()
        json.endObject()
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(rev, forKey: .rev)
        try container.encode(requirements, forKey: .requirements)
        try container.encode(messages, forKey: .messages)
        try container.encode(strength, forKey: .strength)
        var submit = container.nestedContainer(keyedBy: SubmitKeys.self, forKey: .submit)
        try submit.encode(submitEnabled, forKey: .enabled)
        try container.encodeIfPresent(language, forKey: .language)
        try container.encode(suggestions, forKey: .suggestions)
        try container.encode(credential, forKey: .credential)
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
        language = try container.decodeIfPresent(String.self, forKey: .language)
        suggestions = try container.decodeIfPresent([String: String].self, forKey: .suggestions) ?? [:]
        credential = try container.decodeIfPresent(CredentialMethod.self, forKey: .credential) ?? .password
    }
}
