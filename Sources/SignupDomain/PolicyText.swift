/// Every text of the sign-up rules a person reads: the checklist's requirement texts and the
/// messages under the fields. A policy file may replace any of them (`texts:`, keyed by these
/// raw values); `{name}` placeholders are filled in from the policy's settings.
public enum PolicyText: String, CaseIterable, Sendable {
    case usernameLengthText = "username.length.text"
    case usernameLengthTooShort = "username.length.too_short"
    case usernameLengthTooLong = "username.length.too_long"
    case usernameCharsetText = "username.charset.text"
    case usernameCharsetMessage = "username.charset.message"
    case usernameEmpty = "username.empty"
    case usernameAvailableText = "username.available.text"
    case usernameTaken = "username.available.taken"
    case emailFormatText = "email.format.text"
    case emailFormatMessage = "email.format.message"
    case emailEmpty = "email.empty"
    case passwordLengthText = "password.length.text"
    case passwordLengthMessage = "password.length.message"
    case passwordUppercaseText = "password.uppercase.text"
    case passwordUppercaseMessage = "password.uppercase.message"
    case passwordCommonText = "password.common.text"
    case passwordCommonMessage = "password.common.message"
    case passwordCommonSiteWord = "password.common.site_word"
    case passwordCommonPersonalWord = "password.common.personal_word"
    case passwordStrengthText = "password.strength.text"
    case passwordStrengthMessage = "password.strength.message"
    case passwordStrengthAdvice = "password.strength.default_advice"
    case passwordBreachedText = "password.breached.text"
    case passwordBreachedMessage = "password.breached.message"
    case passwordBreachedOnce = "password.breached.once"
    case passwordBreachedListed = "password.breached.listed"
    case passwordControlMessage = "password.control.message"
    case passwordMaximumMessage = "password.maximum.message"
    case passwordEmpty = "password.empty"
    case confirmMatchText = "confirm.match.text"
    case confirmMatchMessage = "confirm.match.message"
    case confirmEmpty = "confirm.empty"
    case strengthVeryWeak = "strength.very_weak"
    case strengthWeak = "strength.weak"
    case strengthFair = "strength.fair"
    case strengthGood = "strength.good"
    case strengthStrong = "strength.strong"
    /// Between groups of three digits in a count ("3,861"; German writes "3.861").
    case numberGroupSeparator = "number.group_separator"
    // The requirements of fields a policy declares (`FieldDeclaration`); a field's own
    // texts win over these. `{label}` is the field's label.
    case fieldRequiredText = "field.required.text"
    case fieldRequiredMessage = "field.required.message"
    case fieldLengthText = "field.length.text"
    case fieldLengthMinimumText = "field.length.min_text"
    case fieldLengthMaximumText = "field.length.max_text"
    case fieldLengthTooShort = "field.length.too_short"
    case fieldLengthTooLong = "field.length.too_long"
    case fieldAcceptedText = "field.accepted.text"
    case fieldAcceptedMessage = "field.accepted.message"
    case fieldOptionMessage = "field.option.message"
    case fieldControlMessage = "field.control.message"

    /// The strength meter's label for a zxcvbn score (0–4).
    public static func strengthLabel(score: Int) -> PolicyText {
        [.strengthVeryWeak, .strengthWeak, .strengthFair, .strengthGood, .strengthStrong][min(max(score, 0), 4)]
    }

    /// The placeholders this text may use.
    public var placeholders: Set<String> {
        switch self {
        case .usernameLengthText, .usernameLengthTooShort, .usernameLengthTooLong: return ["min", "max"]
        case .passwordLengthText, .passwordLengthMessage: return ["min"]
        case .passwordStrengthMessage: return ["advice"]
        case .passwordMaximumMessage: return ["max_bytes"]
        case .passwordBreachedMessage: return ["count"]
        case .fieldRequiredMessage, .fieldAcceptedMessage, .fieldOptionMessage, .fieldControlMessage: return ["label"]
        case .fieldLengthText: return ["min", "max"]
        case .fieldLengthMinimumText: return ["min"]
        case .fieldLengthMaximumText: return ["max"]
        case .fieldLengthTooShort: return ["label", "min"]
        case .fieldLengthTooLong: return ["label", "max"]
        default: return []
        }
    }

    /// The built-in English text.
    public var english: String {
        switch self {
        case .usernameLengthText: return "{min} to {max} characters"
        case .usernameLengthTooShort: return "Username must be at least {min} characters"
        case .usernameLengthTooLong: return "Username must be at most {max} characters"
        case .usernameCharsetText: return "Only letters, numbers, dots, hyphens and underscores"
        case .usernameCharsetMessage: return "Username can only use letters, numbers, dots, hyphens and underscores"
        case .usernameEmpty: return "Enter a username"
        case .usernameAvailableText: return "Not already taken"
        case .usernameTaken: return "That username is taken"
        case .emailFormatText: return "A valid email address"
        case .emailFormatMessage: return "Enter an email address like name@example.com"
        case .emailEmpty: return "Enter your email address"
        case .passwordLengthText: return "At least {min} characters"
        case .passwordLengthMessage: return "Password must be at least {min} characters"
        case .passwordUppercaseText: return "One uppercase letter"
        case .passwordUppercaseMessage: return "Password must include an uppercase letter"
        case .passwordCommonText: return "Not a commonly used password"
        case .passwordCommonMessage:
            return "That password is on a list of commonly used passwords that attackers try first. Choose something unusual, such as a few unrelated words"
        case .passwordCommonSiteWord:
            return "That password is based on this site's name, which attackers try first. Choose one that has nothing to do with it"
        case .passwordCommonPersonalWord:
            return "That password is based on your username or email, which attackers try first. Choose one that has nothing to do with them"
        case .passwordStrengthText: return "Strong enough"
        case .passwordStrengthMessage: return "This password would be easy to guess. {advice}"
        case .passwordStrengthAdvice: return "Add another word or two; unusual words are better"
        case .passwordBreachedText: return "Not found in a known data breach"
        case .passwordBreachedMessage:
            return "We found this password in known data breaches ({count} times so far), so attackers try it early. Please choose a different one; a few unrelated words work well"
        case .passwordBreachedOnce:
            return "We found this password in a known data breach, so attackers may try it. Please choose a different one; a few unrelated words work well"
        case .passwordBreachedListed:
            return "This password is on a list of passwords from known data breaches. Please choose a different one; a few unrelated words work well"
        case .passwordControlMessage: return "Password can't contain control characters such as tabs or line breaks"
        case .passwordMaximumMessage: return "Password is too long: use at most {max_bytes} bytes (about {max_bytes} Latin letters)"
        case .passwordEmpty: return "Enter a password"
        case .confirmMatchText: return "Matches the password"
        case .confirmMatchMessage: return "Passwords don't match"
        case .confirmEmpty: return "Confirm your password"
        case .strengthVeryWeak: return "Very weak"
        case .strengthWeak: return "Weak"
        case .strengthFair: return "Fair"
        case .strengthGood: return "Good"
        case .strengthStrong: return "Strong"
        case .numberGroupSeparator: return ","
        case .fieldRequiredText: return "Required"
        case .fieldRequiredMessage: return "{label} is required"
        case .fieldLengthText: return "{min} to {max} characters"
        case .fieldLengthMinimumText: return "At least {min} characters"
        case .fieldLengthMaximumText: return "At most {max} characters"
        case .fieldLengthTooShort: return "{label} must be at least {min} characters"
        case .fieldLengthTooLong: return "{label} must be at most {max} characters"
        case .fieldAcceptedText: return "Ticked"
        case .fieldAcceptedMessage: return "Tick this box to continue"
        case .fieldOptionMessage: return "Choose one of the listed options for {label}"
        case .fieldControlMessage: return "{label} can't contain line breaks or other control characters"
        }
    }
}

/// The texts one policy uses: the built-in ones, with a language's and a policy file's
/// replacements, and translations of the strength estimator's English advice.
public struct PolicyTexts: Sendable, Hashable {
    private var replaced: [PolicyText: String]
    /// The strength estimator's English warnings and suggestions, translated (the English
    /// sentence is the key); a sentence without one stays English.
    public private(set) var feedback: [String: String]

    public init(_ replaced: [PolicyText: String] = [:], feedback: [String: String] = [:]) {
        self.replaced = replaced
        self.feedback = feedback
    }

    public static let builtIn = PolicyTexts()

    /// Which texts were replaced.
    public var replacedTexts: Set<PolicyText> { Set(replaced.keys) }

    /// These texts over `base`'s: a policy file's own wording wins over a language's.
    public func over(_ base: PolicyTexts) -> PolicyTexts {
        PolicyTexts(base.replaced.merging(replaced) { $1 }, feedback: base.feedback.merging(feedback) { $1 })
    }

    /// A piece of the strength estimator's advice in this language.
    public func feedback(_ english: String) -> String {
        feedback[english] ?? english
    }

    /// `text` with its placeholders filled in.
    public func callAsFunction(_ text: PolicyText, _ values: [String: String] = [:]) -> String {
        Self.fill(replaced[text] ?? text.english, values)
    }

    /// Placeholders a text names that it may not use (a typo such as `{mni}`).
    public static func unknownPlaceholders(in template: String, for text: PolicyText) -> [String] {
        placeholders(in: template).filter { !text.placeholders.contains($0) }
    }

    static func placeholders(in template: String) -> [String] {
        var names: [String] = []
        var rest = template[...]
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            names.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return names
    }

    static func fill(_ template: String, _ values: [String: String]) -> String {
        guard template.contains("{") else { return template }
        var result = template
        for (name, value) in values {
            result = result.replacingOccurrences(of: "{\(name)}", with: value)
        }
        return result
    }
}
