/// The settings a sign-up policy is made of, as plain data. `SignupPolicy` turns one into the
/// rules the checklist, the events and the submit check share; `--policy` picks one by name.
public struct Policy: Sendable, Hashable {
    /// The name `--policy` selects it by.
    public let name: String
    /// One sentence for operators and the docs.
    public let summary: String
    /// Username length in code points (after NFC).
    public let usernameLength: ClosedRange<Int>
    /// Minimum password length in code points (after NFC). There is no maximum length in
    /// characters; `passwordMaximumBytes` only stops absurd input.
    public let passwordMinimumLength: Int
    /// Longest password accepted, in UTF-8 bytes after NFC. Never truncated: longer is refused.
    public let passwordMaximumBytes: Int
    /// The source articles' composition rule. NIST SP 800-63B-4 forbids composition rules.
    public let requiresUppercase: Bool
    /// Lowest acceptable zxcvbn score (0–4) for `password.strength`.
    public let minimumStrengthScore: Int
    /// The site's name: a context word passwords must not be based on, and a reserved name.
    public let serviceName: String
    /// Names nobody may take; the live check calls them taken, like any used name.
    public let reservedUsernames: [String]

    public init(
        name: String, summary: String, usernameLength: ClosedRange<Int>, passwordMinimumLength: Int,
        passwordMaximumBytes: Int, requiresUppercase: Bool, minimumStrengthScore: Int,
        serviceName: String, reservedUsernames: [String]
    ) {
        self.name = name
        self.summary = summary
        self.usernameLength = usernameLength
        self.passwordMinimumLength = passwordMinimumLength
        self.passwordMaximumBytes = passwordMaximumBytes
        self.requiresUppercase = requiresUppercase
        self.minimumStrengthScore = minimumStrengthScore
        self.serviceName = serviceName
        self.reservedUsernames = reservedUsernames
    }

    /// Names that would impersonate the site or its staff, or shadow a route.
    public static let defaultReservedUsernames = [
        "admin", "administrator", "root", "support", "security", "postmaster", "abuse", "webmaster",
        "hostmaster", "info", "api", "www", "mail", "help", "system", "staff", "moderator",
        // Routes of this server.
        "signin", "signup", "welcome", "events", "fields", "sessions", "static",
        // The service name.
        "livesignup",
    ]

    /// The source articles' checklist (username 4–32, password ≥ 8 with an uppercase letter,
    /// not common, confirmed) plus a zxcvbn score of at least 2.
    public static let classic = Policy(
        name: "classic",
        summary: "The classic checklist: 8+ characters, one uppercase letter, not common, zxcvbn score ≥ 2.",
        usernameLength: 4...32, passwordMinimumLength: 8, passwordMaximumBytes: 1024,
        requiresUppercase: true, minimumStrengthScore: 2,
        serviceName: "LiveSignup", reservedUsernames: defaultReservedUsernames)

    /// NIST SP 800-63B-4 for passwords used as a single factor: 15+ characters, no
    /// composition rules, blocklist and context words, zxcvbn score ≥ 3.
    public static let nist = Policy(
        name: "nist",
        summary: "NIST SP 800-63B-4 single-factor: 15+ characters, no composition rules, not common, zxcvbn score ≥ 3.",
        usernameLength: 4...32, passwordMinimumLength: 15, passwordMaximumBytes: 1024,
        requiresUppercase: false, minimumStrengthScore: 3,
        serviceName: "LiveSignup", reservedUsernames: defaultReservedUsernames)

    public static let all = [classic, nist]

    /// The policy `--policy NAME` means, if any.
    public static func named(_ name: String) -> Policy? {
        all.first { $0.name == name.lowercased() }
    }
}
