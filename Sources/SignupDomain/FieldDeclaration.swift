/// One field of the sign-up form as a policy declares it (`fields:` in a policy file, in page
/// order): what kind of input it is, which requirements it has, whether the account keeps its
/// value, and the words it shows. Everything else (the page's markup, the checklist, the live
/// events, the submit check, the stored profile) is derived from it.
public struct FieldDeclaration: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        // The built-in four: their rules are the policy's `username:` and `password:` settings.
        case username, email, password, confirm
        /// One line of text.
        case text
        /// A box to tick; its value is "on" when ticked and "" when not (as a browser posts it).
        case checkbox
        /// One of a fixed list of options.
        case select

        /// The kinds an operator may declare (the others are the built-in fields themselves).
        public static let declarable: [Kind] = [.text, .checkbox, .select]

        public var isBuiltIn: Bool { !Self.declarable.contains(self) }

        /// The policy setting a built-in field's rules come from (`username:`, `password:`).
        var rulesSetting: String? {
            switch self {
            case .username: return "username"
            case .password, .confirm: return "password"
            case .email, .text, .checkbox, .select: return nil
            }
        }
    }

    public var name: String
    public var kind: Kind
    /// The `autocomplete` token the page gives the input (e.g. "nickname", "organization").
    public var autocomplete: String?
    /// `<name>.required`: not empty (text, select).
    public var isRequired: Bool = false
    /// `<name>.length`: code points after NFC (text).
    public var minimumLength: Int?
    public var maximumLength: Int?
    /// `<name>.pattern`: the whole value must match this regular expression (text).
    public var pattern: String?
    /// `<name>.accepted`: the box must be ticked (checkbox).
    public var mustBeAccepted: Bool = false
    /// A select's values, in the order shown. Their labels are the texts `option.<value>`.
    public var options: [String] = []
    /// The account keeps the value in its profile (`Account.profile`).
    public var isStored: Bool = false
    /// For a checkbox: the page links the label's `[bracketed words]` here, and a stored,
    /// ticked box records this address and when it was ticked (`<name>_url`,
    /// `<name>_accepted_at`), so an operator can tell which terms someone accepted.
    public var linkURL: String?
    /// The field's own words (`label`, `hint`, `<requirement>.text`, `<requirement>.message`,
    /// `option.<value>`), in the policy's main language.
    public var texts: [String: String] = [:]
    /// The same, per language tag; a language listed here takes these over `texts`.
    public var textsByLanguage: [String: [String: String]] = [:]

    public init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }

    public var field: SignupField { SignupField(rawValue: name) }

    /// The built-in four as the presets declare them, in page order.
    public static let builtIn: [FieldDeclaration] = [
        FieldDeclaration(name: "username", kind: .username), FieldDeclaration(name: "email", kind: .email),
        FieldDeclaration(name: "password", kind: .password), FieldDeclaration(name: "confirm", kind: .confirm),
    ]

    /// Names a declared field may not take: the form's own parameters (`token`, `lang`), the
    /// edit protocol's (`field`, `value`, `seq`, `touched`), and the ones the next features
    /// post (`code`, `altcha`, `return_to`, `passkey`).
    public static let reservedNames: Set<String> = [
        "token", "lang", "field", "value", "seq", "touched", "code", "altcha", "return_to", "passkey", "credential", "response", "submit",
    ]

    /// The field's own text for `key` in `language`, if the declaration gives one.
    public func text(_ key: String, language: String?) -> String? {
        if let language, let own = textsByLanguage[language]?[key] { return own }
        return texts[key]
    }

    /// The keys a declaration's texts may have, for its kind and requirements.
    public var textKeys: [String] {
        var keys = ["label", "hint"]
        if isRequired { keys += ["required.text", "required.message"] }
        if minimumLength != nil || maximumLength != nil { keys += ["length.text", "length.too_short", "length.too_long"] }
        if pattern != nil { keys += ["pattern.text", "pattern.message"] }
        if mustBeAccepted { keys += ["accepted.text", "accepted.message"] }
        keys += options.map { "option.\($0)" }
        return keys
    }
}
