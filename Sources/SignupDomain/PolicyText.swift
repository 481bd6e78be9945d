/// Every text of the sign-up rules a person reads: the checklist's requirement texts and the
/// messages under the fields, named here and worded only in the language catalogs (English:
/// `TextCatalog.builtInEnglish`). A policy file may replace any of them (`texts:`, keyed by
/// these raw values); `{name}` placeholders are filled in from the policy's settings.
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
    case emailDisposableText = "email.disposable.text"
    case emailDisposableMessage = "email.disposable.message"
    case emailDeliverableText = "email.deliverable.text"
    case emailDeliverableMessage = "email.deliverable.message"
    case passwordLengthText = "password.length.text"
    case passwordLengthMessage = "password.length.message"
    case passwordUppercaseText = "password.uppercase.text"
    case passwordUppercaseMessage = "password.uppercase.message"
    case passwordCommonText = "password.common.text"
    case passwordCommonMessage = "password.common.message"
    case passwordCommonSiteWord = "password.common.site_word"
    case passwordCommonPersonalWord = "password.common.personal_word"
    /// A new-password form's (account recovery) own requirement: not containing the account's
    /// username or address anywhere.
    case passwordPersonalText = "password.personal.text"
    case passwordPersonalMessage = "password.personal.message"
    /// A new-password form's rule for an account that has a password.
    case passwordNotCurrentText = "password.not_current.text"
    case passwordNotCurrentMessage = "password.not_current.message"
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
    case passkeyCreatedText = "passkey.created.text"
    case passkeyCreatedMessage = "passkey.created.message"
    case providerSignedInText = "provider.signed_in.text"
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
        case .emailDeliverableMessage: return ["domain"]
        case .fieldRequiredMessage, .fieldAcceptedMessage, .fieldOptionMessage, .fieldControlMessage: return ["label"]
        case .fieldLengthText: return ["min", "max"]
        case .fieldLengthMinimumText: return ["min"]
        case .fieldLengthMaximumText: return ["max"]
        case .fieldLengthTooShort: return ["label", "min"]
        case .fieldLengthTooLong: return ["label", "max"]
        default: return []
        }
    }
}

/// The texts one policy uses: the built-in English catalog's, with a language's and a policy
/// file's replacements, and the language's words for the advice the strength estimator and
/// the username checks give by key (`advice.*`, `username.unsafe.*`).
public struct PolicyTexts: Sendable, Hashable {
    fileprivate var replaced: [PolicyText: String]
    /// The advice texts by key, in this language; a key without one is said in English.
    public private(set) var feedback: [String: String]
    /// The language these texts are in ("en", "pl"): its plural rules choose a text's form
    /// (`MessageFormat`).
    public private(set) var language: String

    public init(_ replaced: [PolicyText: String] = [:], feedback: [String: String] = [:], language: String = "en") {
        self.replaced = replaced
        self.feedback = feedback
        self.language = language
    }

    /// Whether a catalog key names advice (said through `feedback(_:)`), not a `PolicyText`.
    public static func isAdviceKey(_ key: String) -> Bool {
        key.hasPrefix("advice.") || key.hasPrefix("username.unsafe.")
    }

    public static let builtIn = PolicyTexts()

    /// Which texts were replaced.
    public var replacedTexts: Set<PolicyText> { Set(replaced.keys) }

    /// These texts over `base`'s: a policy file's own wording wins over a language's.
    public func over(_ base: PolicyTexts) -> PolicyTexts {
        // The base is the language's catalog (a policy file's wording goes over it).
        PolicyTexts(base.replaced.merging(replaced) { $1 }, feedback: base.feedback.merging(feedback) { $1 },
                    language: base.language)
    }

    /// A piece of advice (the strength estimator's, a username check's) in this language:
    /// its key's text, else the built-in English one. English lives only in the catalog.
    public func feedback(_ key: String) -> String {
        feedback[key] ?? Self.englishAdvice[key] ?? key
    }

    private static let englishAdvice: [String: String] = TextCatalog.builtInEnglish.policyTexts.feedback

    /// `text` with its placeholders filled in.
    public func callAsFunction(_ text: PolicyText, _ values: [String: String] = [:]) -> String {
        Self.fill(replaced[text] ?? Self.english[text] ?? text.rawValue, values, language: language)
    }

    /// The built-in English wording of every policy text (`TextCatalog.builtInEnglish`).
    private static let english: [PolicyText: String] = TextCatalog.builtInEnglish.policyTexts.replaced

    /// Placeholders a text names that it may not use (a typo such as `{mni}`).
    public static func unknownPlaceholders(in template: String, for text: PolicyText) -> [String] {
        placeholders(in: template).filter { !text.placeholders.contains($0) }
    }

    /// The argument names a text uses: `{min}`, and in ICU's syntax `{max, plural, …}`.
    static func placeholders(in template: String) -> [String] {
        template.matches(of: #/\{([a-z_]+)[},]/#).map { String($0.output.1) }
    }

    /// `template` filled in: plainly, or by ICU in `language` when it uses MessageFormat's
    /// syntax (then a value of digits counts as a number, which plurals choose by).
    static func fill(_ template: String, _ values: [String: String], language: String = "en") -> String {
        // One mechanism for every text: `MessageFormat.fill` fills a plain one plainly.
        guard template.contains("{"), !values.isEmpty else { return template }
        return MessageFormat.fill(template, values.mapValues { value in Int(value).map(MessageValue.number) ?? .text(value) },
                                  language: language)
    }
}
