/// One setting an operator may give, declared once: the section and key it has in the
/// configuration file, the command-line flag and environment variable it has had since before
/// the file existed, its kind (which also bounds it), its default, one line of help, and
/// whether it is a secret. The file's reader, the environment and the flags, `config print`,
/// `config check`, `serve --help` and docs/CONFIGURATION.md all read these declarations.
public struct SettingDeclaration: Sendable {
    public let section: SettingSection
    /// The key inside its section, in snake_case: `port` in `server:`.
    public let key: String
    /// The long flag without its dashes (`--port`), kept from before the file. A secret has none
    /// (a flag shows in `ps`): it comes from the environment, a `_FILE`, or the file's `_file` key.
    public let flag: String
    public let kind: SettingKind
    /// The default as an operator would write it; nil: unset unless given.
    public let defaultText: String?
    /// One line: what it does, in the operator's terms.
    public let help: String
    /// Read only from a file a path names (the file's `<key>_file`, the environment's
    /// `…_FILE`) or the environment itself; never a flag, never printed.
    public let secret: Bool
    /// More checks than the kind's (a URL's scheme, an address's form): the reason it is
    /// wrong, or nil.
    public let check: (@Sendable (String) -> String?)?

    public init(_ section: SettingSection, _ key: String, flag: String, _ kind: SettingKind, default defaultText: String? = nil,
                help: String, secret: Bool = false, check: (@Sendable (String) -> String?)? = nil) {
        self.section = section
        self.key = key
        self.flag = flag
        self.kind = kind
        self.defaultText = defaultText
        self.help = help
        self.secret = secret
        self.check = check
    }

    /// Only the file gives it (a YAML mapping: the policy inline): no flag, no variable.
    public var fileOnly: Bool { if case .document = kind { return true } else { return false } }

    /// Why `value` is refused (its kind, then the declaration's own check, each item of a
    /// list), or nil: every source's value is held to this one test.
    public func problem(with value: SettingValue) -> String? {
        switch value {
        case .single(let text): return kind.problem(with: text) ?? check?(text)
        case .list(let items): return items.lazy.compactMap { check?($0) }.first
        }
    }

    /// `server.port`: how `config print` and errors name it.
    public var path: String { section.rawValue + "." + key }

    /// `LIVESIGNUP_PORT`: the flag upper-cased, dashes as underscores.
    public var environmentVariable: String {
        "LIVESIGNUP_" + flag.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// `LIVESIGNUP_SMTP_PASSWORD_FILE`: the variable naming a file that holds the value (the
    /// container and systemd-credentials convention), for every setting.
    public var fileVariable: String { environmentVariable + "_FILE" }

    /// The file's key for a secret: `password_file: /run/secrets/smtp`.
    public var fileKey: String { secret ? key + "_file" : key }
}

/// The file's sections, each about one thing.
public enum SettingSection: String, CaseIterable, Sendable {
    case server
    case store
    case policy
    case lookups
    case mail
    case webhooks
    case proofOfWork = "proof_of_work"
    case limits
    case signIn = "sign_in"
    case providers
    case logging
    case metrics

    /// One line, for the reference and the example file.
    public var about: String {
        switch self {
        case .server: return "Where the server listens, its public origins, its page files and its connections."
        case .store: return "The account store: a SQLite file, or PostgreSQL for several instances."
        case .policy: return "The sign-up policy, password hashing and the languages spoken."
        case .lookups: return "Outside look-ups while people type: breached passwords and mail domains."
        case .mail: return "Proving addresses: the mail server or folder, the sender, how long codes work."
        case .webhooks: return "Where account events go as signed Standard Webhooks."
        case .proofOfWork: return "The proof of work a sign-up pays (bots pay, people don't)."
        case .limits: return "Abuse limits: rates are COUNT/UNIT[,burst=N] with UNIT s, min, h or d, or 'off'."
        case .signIn: return "Signed-in sessions, recent sign-in, second factors, cookies and the keys they are sealed with."
        case .providers: return "OpenID providers people sign in through (declared in the policy; their secrets here)."
        case .logging: return "Log lines and the access log."
        case .metrics: return "Who may read /metrics."
        }
    }
}

/// What a setting holds, and so how each source spells it and which values it refuses.
public enum SettingKind: Sendable {
    /// Any text.
    case text
    /// A whole number, within the bounds when given.
    case integer(ClosedRange<Int>?)
    /// A number, within the bounds when given.
    case decimal(ClosedRange<Double>?)
    /// On or off: a flag without a value; `true`/`false` in the file; 1/true/yes/on in the environment.
    case boolean
    /// One of these words.
    case choice([String])
    /// Several values: a flag given again, a YAML list, a comma-separated variable.
    case list
    /// A YAML mapping kept whole, only in the file (the policy written inline).
    case document

    /// How the reference names it.
    public var summary: String {
        switch self {
        case .text: return "text"
        case .integer(let bounds?): return "integer \(bounds.lowerBound)–\(bounds.upperBound)"
        case .integer(nil): return "integer"
        case .decimal(let bounds?): return "number \(Self.format(bounds.lowerBound))–\(Self.format(bounds.upperBound))"
        case .decimal(nil): return "number"
        case .boolean: return "true or false"
        case .choice(let words):
            return words.count < 2 ? words.joined() : words.dropLast().joined(separator: ", ") + " or " + words.last!
        case .list: return "list"
        case .document: return "mapping"
        }
    }

    static func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }
}
