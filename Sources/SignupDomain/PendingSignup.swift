import Crypto
import Foundation

/// A sign-up waiting for its email address to be proved: everything the account will be
/// made of, the keyed hashes of the code and the link that prove the address, and how long
/// the username stays held for it. No account row exists until the proof
/// (`PendingSignups.completePendingSignup`).
public struct PendingSignup: Sendable, Equatable {
    /// The sign-up form's token: the `/verify` page carries it, and each form has at most one.
    public let formToken: String
    public let username: String
    public let email: String
    public let passwordHash: String
    public let profile: [String: ProfileValue]
    /// The language tag the person used, for the page and the mails.
    public let language: String
    /// The validated `return_to`, "" for none.
    public let returnTo: String
    /// `VerificationSecrets.codeHash` of the six digits mailed last.
    public let codeHash: String
    /// `VerificationSecrets.linkHash` of the link mailed last.
    public let linkHash: String
    /// Wrong codes typed since the last one was mailed.
    public let wrongTries: Int
    /// Codes mailed for this sign-up (the first one included).
    public let codesSent: Int
    public let lastSentAt: Date
    /// The code, the link and the username's hold end here.
    public let expiresAt: Date
    public let createdAt: Date
    /// The passkey made on the form, if any: stored with the account once the address is proved.
    public let passkey: NewPasskey?
    /// Whether the form ran JavaScript: the funnel's `javascript` label when the address is
    /// proved (issue 59), maybe on another instance.
    public let ranJavaScript: Bool

    public init(formToken: String, username: String, email: String, passwordHash: String,
                profile: [String: ProfileValue], language: String, returnTo: String, codeHash: String,
                linkHash: String, wrongTries: Int, codesSent: Int, lastSentAt: Date, expiresAt: Date, createdAt: Date, passkey: NewPasskey? = nil,
                ranJavaScript: Bool = false) {
        self.passkey = passkey
        self.ranJavaScript = ranJavaScript
        self.formToken = formToken
        self.username = username
        self.email = email
        self.passwordHash = passwordHash
        self.profile = profile
        self.language = language
        self.returnTo = returnTo
        self.codeHash = codeHash
        self.linkHash = linkHash
        self.wrongTries = wrongTries
        self.codesSent = codesSent
        self.lastSentAt = lastSentAt
        self.expiresAt = expiresAt
        self.createdAt = createdAt
    }

    /// A sign-up that starts now: no wrong tries, one code sent.
    public static func starting(formToken: String, username: String, email: String, passwordHash: String,
                                profile: [String: ProfileValue], language: String, returnTo: String,
                                codeHash: String, linkHash: String, at now: Date, lifetime: TimeInterval,
                                passkey: NewPasskey? = nil, ranJavaScript: Bool = false) -> PendingSignup {
        PendingSignup(formToken: formToken, username: username, email: email, passwordHash: passwordHash,
                      profile: profile, language: language, returnTo: returnTo, codeHash: codeHash, linkHash: linkHash,
                      wrongTries: 0, codesSent: 1, lastSentAt: now, expiresAt: now.addingTimeInterval(lifetime), createdAt: now,
                      passkey: passkey, ranJavaScript: ranJavaScript)
    }

    /// The account this sign-up becomes once proved.
    public func newAccount(announce: Bool) -> NewAccount {
        NewAccount(username: username, email: email, passwordHash: passwordHash, formToken: formToken,
                   profile: profile, announce: announce, passkey: passkey)
    }
}

/// Sign-ups waiting for their address to be proved, shared by every instance.
public protocol PendingSignups: Sendable {
    /// Stores `pending` and its mail (one transaction: never the one without the other),
    /// replacing this form's earlier pending sign-up, if any. Throws
    /// `AccountCreationError.usernameTaken` when an account or another form's unexpired
    /// pending sign-up holds the canonical username, `.formAlreadyUsed` when the form
    /// already created an account; the store is then unchanged.
    func startPendingSignup(_ pending: PendingSignup, mail: OutboxEvent, at now: Date) throws

    /// This form's pending sign-up, if it has not expired by `now`.
    func pendingSignup(formToken: String, at now: Date) throws -> PendingSignup?

    /// The pending sign-up whose mailed link has this hash, if it has not expired by `now`.
    func pendingSignup(linkHash: String, at now: Date) throws -> PendingSignup?

    /// Spends one of this form's code tries, in one atomic update, before the typed code is
    /// compared: returns the tries now spent, or nil when `maximum` were spent already (or
    /// the form has no pending sign-up). Guesses sent in parallel therefore get no more tries
    /// than guesses sent one by one.
    func spendCodeTry(formToken: String, maximum: Int) throws -> Int?

    /// A new code and link for this form (the old ones stop working), mailed with `mail` in
    /// the same transaction; the hold is extended to `expiresAt` and the wrong tries start
    /// again. Returns false (and changes nothing) when the form has no pending sign-up.
    func replaceCode(formToken: String, codeHash: String, linkHash: String, sentAt: Date, expiresAt: Date,
                     mail: OutboxEvent) throws -> Bool

    /// Turns this form's pending sign-up into its account, in one transaction that deletes
    /// the pending row (so a code or link works once): returns nil when there is none any
    /// more (used, cancelled or expired by `now`). Throws `AccountCreationError.emailTaken`
    /// when another account took the address meanwhile (the pending sign-up is deleted).
    func completePendingSignup(formToken: String, at now: Date, announce: Bool) throws -> Account?

    /// Forgets this form's pending sign-up (the person changes the address); the username is
    /// released. Forgetting one that is gone is not an error.
    func cancelPendingSignup(formToken: String) throws

    /// Deletes pending sign-ups expired by `now`; returns how many.
    func removeExpiredPendingSignups(at now: Date) throws -> Int

    /// Whether an account proved this address (compared without regard to case).
    func isEmailTaken(_ email: String) throws -> Bool
}

/// The secrets that prove an address: a six-digit code to type and a link to follow, made
/// from the system's random generator, and stored only as keyed hashes (HMAC-SHA-256 with a
/// key the store keeps apart), so a copy of the table proves nothing. The code's hash is
/// bound to its form, so one table row's hash says nothing about another's code.
public struct VerificationSecrets: Sendable {
    public static let keyLength = 32
    /// The key's bytes (a `SymmetricKey` is made per use: it is not `Sendable`).
    private let keyBytes: [UInt8]
    private var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    public init(key: [UInt8]) {
        keyBytes = key
    }

    public static func makeKey() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<keyLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// Six decimal digits, every value equally likely ("004217" included).
    public static func makeCode() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = Int.random(in: 0..<1_000_000, using: &generator)
        let digits = String(value)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }

    /// 32 random bytes in base64url: the link's secret part.
    public static func makeLinkToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A random hash no code or link has: for a pending sign-up that can never be proved.
    public static func unmatchableHash() -> String {
        Hex.encode(SHA256.hash(data: Data(makeLinkToken().utf8)))
    }

    public func codeHash(_ code: String, formToken: String) -> String {
        Hex.encode(mac("code\u{0}\(formToken)\u{0}\(code)"))
    }

    public func linkHash(_ token: String) -> String {
        Hex.encode(mac("link\u{0}\(token)"))
    }

    /// What the browser that made a pending sign-up keeps in a cookie, so only it can change
    /// the sign-up: the form token travels in URLs (`/verify?token=…`), this never does.
    public func browserBinding(formToken: String) -> String {
        Hex.encode(mac("browser\u{0}\(formToken)"))
    }

    /// Whether `binding` is this form's browser binding, compared in constant time.
    public func isBrowserBinding(_ binding: String, formToken: String) -> Bool {
        guard let given = Hex.decode(Substring(binding)) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: Data("browser\u{0}\(formToken)".utf8), using: key)
    }

    /// Whether `code` is the one whose hash is `storedHash`, compared in constant time.
    public func codeMatches(_ code: String, formToken: String, storedHash: String) -> Bool {
        guard let stored = Hex.decode(Substring(storedHash)) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(stored, authenticating: Data("code\u{0}\(formToken)\u{0}\(code)".utf8),
                                                      using: key)
    }

    private func mac(_ text: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key))
    }
}

/// What a code from the mail looks like, declared once: the page's `pattern`, the live
/// check in app.js (`data-code-shape`) and the server's check all use it.
public enum VerificationCodeShape {
    public static let length = 6
    /// For the code field's `pattern` attribute (the whole value must match).
    public static let pattern = "[0-9]{6}"

    /// The six digits typed, without the spaces or dashes people type or paste between
    /// them; nil when it is not six digits.
    public static func normalized(_ typed: String) -> String? {
        let kept = typed.unicodeScalars.filter { !CharacterSet.whitespaces.contains($0) && $0 != "-" }
        guard kept.count == length, kept.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
        return String(String.UnicodeScalarView(kept))
    }
}
