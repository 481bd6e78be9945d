import Foundation

/// The settings a sign-up policy is made of, as plain data. `FormPolicy` turns one into the
/// rules the checklist, the events and the submit check share. `--policy` picks a preset by
/// name or reads a policy file (`PolicyFile`); the presets are policy files too, shipped in
/// the module's resources (Resources/policies).
public struct Policy: Sendable {
    /// The name `--policy` selects it by (or the file's own).
    public var name: String
    /// One sentence for operators and the docs.
    public var summary: String
    /// Username length in code points (after NFC).
    public var usernameLength: ClosedRange<Int>
    /// Which characters a username may use.
    public var usernameCharacters: UsernameCharacters
    /// Minimum password length in code points (after NFC). There is no maximum length in
    /// characters; `passwordMaximumBytes` only stops absurd input.
    public var passwordMinimumLength: Int
    /// Longest password accepted, in UTF-8 bytes after NFC. Never truncated: longer is refused.
    public var passwordMaximumBytes: Int
    /// The source articles' composition rule. NIST SP 800-63B-4 forbids composition rules.
    public var requiresUppercase: Bool
    /// Lowest acceptable zxcvbn score (0–4) for `password.strength`.
    public var minimumStrengthScore: Int
    /// The site's name: a context word passwords must not be based on, and a reserved name.
    public var serviceName: String
    /// Names nobody may take; the live check calls them taken, like any used name.
    public var reservedUsernames: [String]
    /// Passwords refused as too common (`password.common`).
    public var blocklist: CommonPasswords
    /// Where `blocklist` came from ("builtin", "none" or a file), for operators.
    public var blocklistSource: String
    /// More words passwords must not be based on, besides the username, the email and
    /// `serviceName` (the company's name, the product's).
    public var contextWords: [String]
    /// How long a username must stay unchanged before it is looked up, if the policy says;
    /// otherwise the server's `--availability-debounce-ms`.
    public var availabilityDebounceMilliseconds: Int?
    /// The domains an address's typo is corrected towards ("Did you mean …?"); none turns
    /// suggestions off.
    public var emailSuggestions: EmailDomainSuggester = .builtIn
    /// Throwaway mail domains: with a list, `email.disposable` refuses them.
    public var disposableEmailDomains: DisposableEmailDomains?
    /// Where `disposableEmailDomains` came from (files, an inline list), for operators.
    public var disposableEmailSource: String?
    /// What every requirement and message says.
    public var texts: PolicyTexts
    /// A policy file's wording for one language (`texts_by_language`, keyed by tag): a
    /// language listed here takes these over its catalog instead of `texts`, which are one
    /// language's words (usually English) and would otherwise show in every language.
    public var textsByLanguage: [String: PolicyTexts] = [:]
    /// The form's fields in page order: the built-in four, plus any the policy file declares.
    public var fields: [FieldDeclaration] = FieldDeclaration.builtIn
    /// Whether accounts may or must have a second factor (`second_factor` in a policy file).
    public var secondFactor: SecondFactorRule = .optional
    /// Wrong codes in a row before the app's codes are refused (`second_factor_wrong_codes`).
    public var secondFactorLockout = SecondFactorLockout()
    /// OpenID Connect providers a person may sign up or sign in through (`providers`).
    public var providers: [ProviderDeclaration] = []
    /// The applications LiveSignup is the OpenID provider of (`clients`, issue 56).
    public var clients: [ClientDeclaration] = []

    /// Every language the policy gives wording of its own, its texts' and its fields'.
    public var languageTags: Set<String> {
        Set(textsByLanguage.keys).union(fields.flatMap(\.textsByLanguage.keys))
    }

    public init(
        name: String, summary: String, usernameLength: ClosedRange<Int>,
        usernameCharacters: UsernameCharacters = .standard, passwordMinimumLength: Int,
        passwordMaximumBytes: Int, requiresUppercase: Bool, minimumStrengthScore: Int,
        serviceName: String, reservedUsernames: [String], blocklist: CommonPasswords = .builtIn,
        blocklistSource: String = "builtin", contextWords: [String] = [],
        availabilityDebounceMilliseconds: Int? = nil, texts: PolicyTexts = .builtIn
    ) {
        self.name = name
        self.summary = summary
        self.usernameLength = usernameLength
        self.usernameCharacters = usernameCharacters
        self.passwordMinimumLength = passwordMinimumLength
        self.passwordMaximumBytes = passwordMaximumBytes
        self.requiresUppercase = requiresUppercase
        self.minimumStrengthScore = minimumStrengthScore
        self.serviceName = serviceName
        self.reservedUsernames = reservedUsernames
        self.blocklist = blocklist
        self.blocklistSource = blocklistSource
        self.contextWords = contextWords
        self.availabilityDebounceMilliseconds = availabilityDebounceMilliseconds
        self.texts = texts
    }

    /// What a policy file's omitted settings are: the classic checklist's values.
    public static let defaults = Policy(
        name: "custom", summary: "", usernameLength: 4...32, passwordMinimumLength: 8, passwordMaximumBytes: 1024,
        requiresUppercase: true, minimumStrengthScore: 2, serviceName: "LiveSignup", reservedUsernames: [])

    /// The shipped presets, by name.
    public static let presetNames = ["classic", "nist"]

    /// The source articles' checklist (username 4–32, password ≥ 8 with an uppercase letter,
    /// not common, confirmed) plus a zxcvbn score of at least 2.
    public static let classic = shippedPreset("classic")

    /// NIST SP 800-63B-4 for passwords used as a single factor: 15+ characters, no
    /// composition rules, blocklist and context words, zxcvbn score ≥ 3.
    public static let nist = shippedPreset("nist")

    public static var all: [Policy] { [classic, nist] }

    /// The preset `--policy NAME` means, if any.
    public static func named(_ name: String) -> Policy? {
        all.first { $0.name == name.lowercased() }
    }

    /// The shipped file of a preset (the same format as an operator's).
    public static func presetFile(_ name: String) -> URL? {
        Bundle.module.url(forResource: name, withExtension: "yaml", subdirectory: "policies")
    }

    private static func shippedPreset(_ name: String) -> Policy {
        guard let file = presetFile(name) else {
            preconditionFailure("The \(name) policy file is missing from SignupDomain's resources")
        }
        do {
            return try PolicyFile.load(path: file.path)
        } catch {
            // The shipped files are checked by the tests; a broken one is a build defect.
            preconditionFailure("The shipped \(name) policy does not load: \(error)")
        }
    }
}

/// A policy's word on second factors (issue 44).
public enum SecondFactorRule: String, Sendable, CaseIterable {
    /// Not offered: nobody sets one up (factors set up before are still asked for).
    case off
    /// Each owner's choice, from `/account`.
    case optional
    /// Every account has one: an account without signs in only by setting one up (a passkey
    /// that verified the person counts as both factors).
    case required
}

