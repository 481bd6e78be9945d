import ReactiveValidation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// Every rule of the sign-up form as data. The page's checklist, the live events, the
/// server-side submit check and the tests all read this one value.
public struct SignupPolicy: Sendable {
    public let name: String
    public let username: FieldRules<String>
    /// Checked asynchronously against the account store, after `username`'s rules pass.
    public let usernameAvailability: Requirement
    public let usernameTakenMessage: String
    public let email: FieldRules<String>
    public let password: FieldRules<String>
    public let confirm: FieldRules<PasswordConfirmation>
    public let strengthEstimator: any PasswordStrengthEstimating

    public init(
        name: String,
        username: FieldRules<String>,
        usernameAvailability: Requirement,
        usernameTakenMessage: String,
        email: FieldRules<String>,
        password: FieldRules<String>,
        confirm: FieldRules<PasswordConfirmation>,
        strengthEstimator: any PasswordStrengthEstimating
    ) {
        self.name = name
        self.username = username
        self.usernameAvailability = usernameAvailability
        self.usernameTakenMessage = usernameTakenMessage
        self.email = email
        self.password = password
        self.confirm = confirm
        self.strengthEstimator = strengthEstimator
    }

    /// A field's checklist in display (and priority) order.
    public func requirements(for field: SignupField) -> [Requirement] {
        switch field {
        case .username: return username.requirements + [usernameAvailability]
        case .email: return email.requirements
        case .password: return password.requirements
        case .confirm: return confirm.requirements
        }
    }

    /// The asynchronous "not already taken" rule, answered by `check`; only names that pass
    /// the synchronous username rules are checked.
    public func usernameAvailabilityRule(
        check: @escaping @Sendable (String) -> AnyPublisher<RequirementState, Never>
    ) -> AsyncRule<String> {
        let rules = username
        return AsyncRule(
            id: usernameAvailability.id, text: usernameAvailability.text, message: usernameTakenMessage,
            isEligible: { rules.allMet(by: $0) }, check: check)
    }

    /// Every requirement of the form, field by field.
    public var allRequirements: [Requirement] {
        SignupField.allCases.flatMap(requirements(for:))
    }
}

extension SignupPolicy {
    /// The checklist of the source articles: username 4–32 characters of a safe alphabet,
    /// a valid email, password ≥ 8 characters with an uppercase letter and not a common one,
    /// and a matching confirmation.
    public static func classic(
        commonPasswords: CommonPasswords = .builtIn,
        strengthEstimator: (any PasswordStrengthEstimating)? = nil
    ) -> SignupPolicy {
        SignupPolicy(
            name: "classic",
            username: FieldRules(
                rules: [
                    Rule(id: "username.length", text: "4 to 32 characters",
                         message: { TextLength.codePoints($0) < 4
                             ? "Username must be at least 4 characters"
                             : "Username must be at most 32 characters" },
                         isMet: { (4...32).contains(TextLength.codePoints($0)) }),
                    Rule(id: "username.charset", text: "Only letters, numbers, dots, hyphens and underscores",
                         message: "Username can only use letters, numbers, dots, hyphens and underscores",
                         isMet: { !$0.isEmpty && Username.hasAllowedCharacters($0) }),
                ],
                emptyMessage: "Enter a username"),
            usernameAvailability: Requirement(id: "username.available", text: "Not already taken"),
            usernameTakenMessage: "That username is taken",
            email: FieldRules(
                rules: [
                    Rule(id: "email.format", text: "A valid email address",
                         message: "Enter an email address like name@example.com",
                         isMet: EmailAddress.isValid),
                ],
                emptyMessage: "Enter your email address"),
            password: FieldRules(
                rules: [
                    Rule(id: "password.length", text: "At least 8 characters",
                         message: "Password must be at least 8 characters",
                         isMet: { TextLength.codePoints($0) >= 8 }),
                    Rule(id: "password.uppercase", text: "One uppercase letter",
                         message: "Password must include an uppercase letter",
                         isMet: { $0.unicodeScalars.contains { $0.properties.isUppercase } }),
                    Rule(id: "password.common", text: "Not a commonly used password",
                         message: "That password is too common. Choose one that is harder to guess",
                         isMet: { !$0.isEmpty && !commonPasswords.contains($0) }),
                ],
                emptyMessage: "Enter a password"),
            confirm: FieldRules(
                rules: [
                    Rule(id: "confirm.match", text: "Matches the password",
                         message: "Passwords don't match",
                         isMet: { !$0.confirm.isEmpty && $0.confirm == $0.password }),
                ],
                emptyMessage: "Confirm your password",
                isEmpty: { $0.confirm.isEmpty }),
            strengthEstimator: strengthEstimator ?? CharacterVarietyStrengthEstimator(commonPasswords: commonPasswords))
    }
}
