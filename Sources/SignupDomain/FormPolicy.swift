import Foundation
import ReactiveValidation
import UsernameSafety
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// Every rule of the sign-up form, built from a `Policy`'s settings. The page's checklist,
/// the live events, the server-side submit check and the tests all read this one value.
///
/// A class, though nothing in it changes after `init`: every edit's evaluation and every
/// request handler reads it, and as a struct of some thirty fields each read was a copy
/// with a retain and a release per field. (`@unchecked` for `initialState` alone, which is
/// written once, at the end of `init`, before anyone else can see the policy.)
public final class FormPolicy: @unchecked Sendable {
    /// The settings these rules were built from.
    public let settings: Policy
    public let username: FieldRules<String>
    /// Checked asynchronously against the account store, after `username`'s rules pass.
    public let usernameAvailability: Requirement
    public let usernameTakenMessage: String
    public let email: FieldRules<String>
    public let password: FieldRules<PasswordCandidate>
    public let confirm: FieldRules<PasswordConfirmation>
    public let strengthEstimator: any PasswordStrengthEstimating
    /// `password.breached`, when a breach source is configured; checked asynchronously,
    /// after the password's own rules pass (the source is a service: `Lookups`).
    public let passwordBreach: Requirement?
    /// `email.deliverable`, when DNS checks are on (`--email-dns-check`); checked
    /// asynchronously, after the email's own rules pass.
    public let emailDeliverable: Requirement?
    /// Which of those two the rules have.
    public let lookups: Lookups.Kinds
    /// `password.not_current`, on a new-password form for an account with a password;
    /// answered asynchronously (`Lookups.currentPassword`), after the length rule passes.
    public let passwordNotCurrent: Requirement?
    /// What the password field says when it is the current one.
    let notCurrentMessage: String
    /// `passkey.created`: the checklist's one requirement in place of the password's when the
    /// person signs up with a passkey.
    public let passkeyCreated: Requirement
    /// `provider.signed_in`: in place of the password's checklist when the person signed in
    /// with an OpenID provider (issue 45); met from the start, since the provider answered.
    public let providerSignedIn: Requirement
    /// Under the passkey step once problems are shown and no passkey was made.
    public let passkeyMissingMessage: String
    /// The field the passkey's step follows on the page (the last password field).
    public let passkeyStepFollows: SignupField?
    /// The form's fields in page order when the person chose a passkey: the password fields
    /// gone, the passkey's step after where the last of them was.
    public let passkeyFieldOrder: [SignupField]
    /// Every requirement either credential may show, in the order events go out: the
    /// password's checklist, then `passkey.created`, where the page has them.
    public let liveRequirementOrder: [String]
    /// Every field either credential may show, in page order (the passkey step right after
    /// the password fields): the order of `message` events.
    public let liveFieldOrder: [SignupField]
    private let usernameProblem: (@Sendable (String) -> String?)?
    private let commonPasswordsOverride: CommonPasswords?
    private let reservedCanonicalNames: Set<String>
    private let checklists: [SignupField: [Requirement]]
    /// The account a new password is chosen for (account recovery), nil on the sign-up form.
    /// Its username and address are not fields then: they are what the password must not
    /// be built on, and the form is judged on the password fields alone.
    public let account: AccountContext?

    /// Whose password a new-password form sets: the words it must not contain.
    public struct AccountContext: Sendable, Equatable {
        public let username: String
        public let email: String
        /// Whether it has a password now (a passkey-only account has none): then the new
        /// one must differ from it (`password.not_current`).
        public let hasPassword: Bool

        /// An account's own: its name, its address, whether it has a password.
        public init(of account: Account) {
            self.init(username: account.username, email: account.email, hasPassword: account.hasPassword)
        }

        public init(username: String, email: String, hasPassword: Bool = true) {
            self.username = username
            self.email = email
            self.hasPassword = hasPassword
        }
    }

    /// The language of these rules' texts (a catalog's tag), nil for the policy's own words.
    public let language: String?
    /// Every field of the form in page order, in this language.
    public let fields: [FormField]
    /// The form's fields in page order (built once: every evaluation carries it).
    public let fieldOrder: [SignupField]
    /// Where each field is in `fields`, and so in an evaluation's values in page order.
    private let positions: [SignupField: Int]
    /// Every field: whose problems are all shown once a submit was attempted.
    public let everyField: Set<SignupField>
    /// What a valid form needs met: on the sign-up form the username, the address and a
    /// credential; on a form about an account, only the fields it has (a new password: the
    /// credential; a new address: the address). Worked out once: every evaluation reads it.
    let judges: (username: Bool, email: Bool, credential: Bool)
    /// The positions of the built-in four (nil only for a `Policy` built in code without one).
    let builtInPositions: (username: Int?, email: Int?, password: Int?, confirm: Int?)
    /// The fields the policy declares beyond the built-in four, with their rules, in page order.
    let declaredFields: [DeclaredField]
    /// The order in which a `FormEvaluation` keeps its requirement states and field verdicts,
    /// with a password and with a passkey: the built-in fields' (username, email, then the
    /// password and confirmation, or `passkey.created`), then the declared fields'. Made once,
    /// shared by every evaluation.
    let evaluationOrder: (password: EvaluationOrder, passkey: EvaluationOrder, provider: EvaluationOrder)

    /// The evaluation order of a credential.
    func evaluationOrder(for method: CredentialMethod) -> EvaluationOrder {
        switch method {
        case .password: return evaluationOrder.password
        case .passkey: return evaluationOrder.passkey
        case .provider: return evaluationOrder.provider
        }
    }
    struct EvaluationOrder: Sendable {
        let requirementIDs: [String]
        let fields: [SignupField]
        /// What a stream is told, read straight from an evaluation's arrays (see
        /// `FormEvaluation.changes(since:rev:policy:)`): each of `liveRequirementOrder`'s ids
        /// this credential has, with its position in `requirementIDs`...
        let liveRequirements: [(id: String, position: Int)]
        /// ...and each of `liveFieldOrder`'s fields with the position of its verdict in
        /// `fields`, nil where this credential's page does not show the field (its message is "").
        let liveMessages: [(field: String, position: Int?)]

        init(requirementIDs: [String], fields: [SignupField], pageFields: [SignupField],
             liveRequirementOrder: [String], liveFieldOrder: [SignupField]) {
            self.requirementIDs = requirementIDs
            self.fields = fields
            // Requirement ids are unique in a policy (a field's name, then one rule kind).
            let positions = Dictionary(requirementIDs.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { $1 })
            liveRequirements = liveRequirementOrder.compactMap { id in positions[id].map { (id, $0) } }
            liveMessages = liveFieldOrder.map { field in
                (field.rawValue, pageFields.contains(field) ? fields.lastIndex(of: field) : nil)
            }
        }
    }
    /// How many requirements each built-in field's checklist has.
    let builtInRequirementCounts: (username: Int, email: Int, password: Int, confirm: Int)
    /// `initialEvaluation`, made once at the end of `init` (nil only while it is being made).
    private(set) var initialState: FormEvaluation?

    struct DeclaredField: Sendable {
        let position: Int
        let field: SignupField
        let rules: FieldRules<String>
    }

    public var name: String { settings.name }

    /// - Parameters:
    ///   - usernameProblem: says why a username is unsafe to show or compare (invisible or
    ///     bidi characters, mixed-script look-alikes), or nil when it is fine; nil means ICU's
    ///     spoof checker. (Resolved here, not as a default argument value, so no caller can
    ///     end up without the check.)
    ///   - lookups: the requirements answered outside the process that the rules have; the
    ///     services that answer them are given to the evaluation (`Lookups`).
    public init(
        _ settings: Policy,
        commonPasswords: CommonPasswords? = nil,
        strengthEstimator: any PasswordStrengthEstimating = ZxcvbnStrengthEstimator(),
        usernameProblem: (@Sendable (String) -> String?)? = nil,
        lookups: Lookups.Kinds = [],
        language: String? = nil,
        account: AccountContext? = nil
    ) {
        self.settings = settings
        self.language = language
        self.account = account
        let texts = settings.texts
        self.lookups = lookups
        self.usernameProblem = usernameProblem
        self.commonPasswordsOverride = commonPasswords
        passwordBreach = lookups.contains(.breachedPasswords)
            ? Requirement(id: "password.breached", text: texts(.passwordBreachedText)) : nil
        emailDeliverable = lookups.contains(.mailDomains)
            ? Requirement(id: "email.deliverable", text: texts(.emailDeliverableText)) : nil
        passwordNotCurrent = account?.hasPassword == true
            ? Requirement(id: "password.not_current", text: texts(.passwordNotCurrentText)) : nil
        notCurrentMessage = texts(.passwordNotCurrentMessage)
        self.strengthEstimator = strengthEstimator
        reservedCanonicalNames = Set((settings.reservedUsernames + [settings.serviceName]).map(Username.canonical))
        let lengths = settings.usernameLength
        let bounds = ["min": String(lengths.lowerBound), "max": String(lengths.upperBound)]
        let tooShort = texts(.usernameLengthTooShort, bounds)
        let tooLong = texts(.usernameLengthTooLong, bounds)
        let characters = settings.usernameCharacters
        username = FieldRules(
            rules: [
                Rule(id: "username.length", text: texts(.usernameLengthText, bounds),
                     message: { TextLength.codePoints($0) < lengths.lowerBound ? tooShort : tooLong },
                     isMet: { lengths.contains(TextLength.codePoints($0)) }),
                Rule(id: "username.charset", text: texts(.usernameCharsetText),
                     message: texts(.usernameCharsetMessage),
                     isMet: { !$0.isEmpty && characters.allows($0) }),
            ],
            checks: [Self.safetyCheck(usernameProblem ?? Self.unsafeUsernameMessage, in: texts)],
            emptyMessage: texts(.usernameEmpty))
        usernameAvailability = Requirement(id: "username.available", text: texts(.usernameAvailableText))
        usernameTakenMessage = texts(.usernameTaken)
        var emailRules = [
            Rule<String>(id: "email.format", text: texts(.emailFormatText),
                         message: texts(.emailFormatMessage),
                         isMet: EmailAddress.isValid),
        ]
        if let disposable = settings.disposableEmailDomains {
            emailRules.append(Rule(id: "email.disposable", text: texts(.emailDisposableText),
                                   message: texts(.emailDisposableMessage),
                                   isMet: { EmailAddress.isValid($0) && !disposable.contains(address: $0) }))
        }
        email = FieldRules(rules: emailRules, emptyMessage: texts(.emailEmpty))
        password = Self.passwordRules(settings, commonPasswords: commonPasswords ?? settings.blocklist, account: account)
        confirm = FieldRules(
            rules: [
                Rule(id: "confirm.match", text: texts(.confirmMatchText),
                     message: texts(.confirmMatchMessage),
                     isMet: { !$0.confirm.isEmpty && $0.confirm == $0.password }),
            ],
            emptyMessage: texts(.confirmEmpty),
            isEmpty: { $0.confirm.isEmpty })
        let fields = settings.fields.map { FormField($0, texts: texts, language: language) }
        self.fields = fields
        fieldOrder = fields.map(\.field)
        let positions = Dictionary(uniqueKeysWithValues: fields.enumerated().map { ($0.element.field, $0.offset) })
        self.positions = positions
        everyField = Set(fieldOrder + [.passkey])
        judges = account == nil ? (true, true, true)
            : (false, fieldOrder.contains(.email), fieldOrder.contains(.password) || fieldOrder.contains(.confirm))
        passkeyCreated = Requirement(id: "passkey.created", text: texts(.passkeyCreatedText))
        providerSignedIn = Requirement(id: "provider.signed_in", text: texts(.providerSignedInText))
        passkeyMissingMessage = texts(.passkeyCreatedMessage)
        // The passkey's step stands right after the last password field, wherever the
        // policy puts the password fields; both orders follow from that one place.
        let passkeyStepFollows = fieldOrder.last { $0 == .password || $0 == .confirm }
        self.passkeyStepFollows = passkeyStepFollows
        liveFieldOrder = fieldOrder.flatMap { $0 == passkeyStepFollows ? [$0, .passkey] : [$0] }
        passkeyFieldOrder = liveFieldOrder.filter { !$0.isSecret }
        builtInPositions = (positions[.username], positions[.email], positions[.password], positions[.confirm])
        declaredFields = fields.enumerated().compactMap { position, field in
            field.rules.map { DeclaredField(position: position, field: field.field, rules: $0) }
        }
        var checklists = Self.checklists(username: username, availability: usernameAvailability, email: email,
                                         deliverable: emailDeliverable, password: password, breach: passwordBreach,
                                         notCurrent: passwordNotCurrent, confirm: confirm)
        if account != nil {
            // A form about an account judges the built-in fields it has, nothing else: the
            // account's name (and, on a new-password form, its address) are given, not typed.
            for field in [SignupField.username, .email, .password, .confirm] where !fieldOrder.contains(field) {
                checklists[field] = []
            }
        }
        for declared in declaredFields { checklists[declared.field] = declared.rules.requirements }
        self.checklists = checklists
        let passkeyCreatedID = passkeyCreated.id, providerSignedInID = providerSignedIn.id
        func ids(_ field: SignupField) -> [String] { (checklists[field] ?? []).map(\.id) }
        let declaredIDs = declaredFields.flatMap { $0.rules.requirements.map(\.id) }
        let declaredNames = declaredFields.map(\.field)
        let liveRequirementOrder = liveFieldOrder.flatMap { field in
            // The passkey's slot holds whichever of the two the credential has.
            field == .passkey ? [passkeyCreatedID, providerSignedInID] : (checklists[field] ?? []).map(\.id)
        }
        self.liveRequirementOrder = liveRequirementOrder
        evaluationOrder = (
            password: EvaluationOrder(
                requirementIDs: ids(.username) + ids(.email) + ids(.password) + ids(.confirm) + declaredIDs,
                fields: [.username, .email, .password, .confirm] + declaredNames, pageFields: fieldOrder,
                liveRequirementOrder: liveRequirementOrder, liveFieldOrder: liveFieldOrder),
            passkey: EvaluationOrder(
                requirementIDs: ids(.username) + ids(.email) + [passkeyCreatedID] + declaredIDs,
                fields: [.username, .email, .password, .confirm, .passkey] + declaredNames, pageFields: passkeyFieldOrder,
                liveRequirementOrder: liveRequirementOrder, liveFieldOrder: liveFieldOrder),
            provider: EvaluationOrder(
                requirementIDs: ids(.username) + ids(.email) + [providerSignedInID] + declaredIDs,
                fields: [.username, .email, .password, .confirm, .passkey] + declaredNames, pageFields: passkeyFieldOrder,
                liveRequirementOrder: liveRequirementOrder, liveFieldOrder: liveFieldOrder))
        builtInRequirementCounts = (ids(.username).count, ids(.email).count, ids(.password).count, ids(.confirm).count)
        let emailRulesBuilt = email
        emailDeliverabilityRule = emailDeliverable.map { requirement in
            // The answer comes with the evaluation; this rule only says who is asked about.
            emailRulesBuilt.asyncRule(id: requirement.id, text: requirement.text, check: { _ in Empty().eraseToAnyPublisher() })
        }
        passwordBreachCandidateRule = Self.lengthGatedCandidateRule(passwordBreach, minimum: settings.passwordMinimumLength)
        passwordNotCurrentCandidateRule = Self.lengthGatedCandidateRule(passwordNotCurrent,
                                                                        minimum: settings.passwordMinimumLength)
        initialState = evaluateInitialState()
    }

    private static func passwordRules(_ settings: Policy, commonPasswords: CommonPasswords,
                                      account: AccountContext?) -> FieldRules<PasswordCandidate> {
        let texts = settings.texts
        let minimum = settings.passwordMinimumLength
        var rules = [
            Rule<PasswordCandidate>(
                id: "password.length", text: texts(.passwordLengthText, ["min": String(minimum)]),
                message: texts(.passwordLengthMessage, ["min": String(minimum)]),
                isMet: { TextLength.codePoints($0.password) >= minimum }),
        ]
        if settings.requiresUppercase {
            rules.append(Rule(
                id: "password.uppercase", text: texts(.passwordUppercaseText),
                message: texts(.passwordUppercaseMessage),
                isMet: { $0.password.unicodeScalars.contains { $0.properties.isUppercase } }))
        }
        let siteWord = texts(.passwordCommonSiteWord)
        let personalWord = texts(.passwordCommonPersonalWord)
        let common = texts(.passwordCommonMessage)
        rules.append(Rule(
            id: "password.common", text: texts(.passwordCommonText),
            message: { candidate in
                if let word = candidate.context.word(underlying: candidate.password) {
                    return candidate.context.siteWords.contains(word) ? siteWord : personalWord
                }
                return common
            },
            isMet: { candidate in
                !candidate.password.isEmpty && !commonPasswords.contains(candidate.password)
                    && candidate.context.word(underlying: candidate.password) == nil
            }))
        if let account {
            // A new password for an account must not hold its name or address anywhere, not
            // only be built on them (`password.common`): the attacker who knows whose account
            // it is tries those first. Parts shorter than three characters would refuse too much.
            let local = account.email.split(separator: "@").first.map(String.init) ?? ""
            let words = [account.username, local, account.email].map(ContextWords.fold).filter { $0.count >= 3 }
            rules.append(Rule(
                id: "password.personal", text: texts(.passwordPersonalText), message: texts(.passwordPersonalMessage),
                isMet: { candidate in
                    guard !candidate.password.isEmpty else { return false }
                    let folded = ContextWords.fold(candidate.password)
                    return !words.contains { folded.contains($0) }
                }))
        }
        let score = settings.minimumStrengthScore
        let defaultAdvice = texts(.passwordStrengthAdvice)
        // Split once around {advice}: this message is built on many password keystrokes, and
        // Foundation's replacingOccurrences per keystroke showed in the typing benchmark.
        let strengthTemplate = texts(.passwordStrengthMessage)
        let adviceSlot = strengthTemplate.range(of: "{advice}")
        let (beforeAdvice, afterAdvice) = adviceSlot.map {
            (String(strengthTemplate[..<$0.lowerBound]), String(strengthTemplate[$0.upperBound...]))
        } ?? (strengthTemplate, "")
        rules.append(Rule(
            id: "password.strength", text: texts(.passwordStrengthText),
            message: { candidate in
                guard adviceSlot != nil else { return beforeAdvice }
                return beforeAdvice + (candidate.strength.suggestions.first ?? defaultAdvice) + afterAdvice
            },
            isMet: { !$0.password.isEmpty && $0.strength.score >= score }))
        let maximumBytes = settings.passwordMaximumBytes
        return FieldRules(
            rules: rules,
            checks: [
                Check(id: "password.control", message: texts(.passwordControlMessage),
                      isPassed: { !$0.password.unicodeScalars.contains { $0.properties.generalCategory == .control } }),
                Check(id: "password.maximum",
                      message: texts(.passwordMaximumMessage, ["max_bytes": String(maximumBytes)]),
                      isPassed: { $0.password.utf8.count <= maximumBytes }),
            ],
            emptyMessage: texts(.passwordEmpty),
            isEmpty: { $0.password.isEmpty })
    }

    /// The same rules with their texts in a language: `texts` (the language's catalog) under
    /// the policy file's wording for that language if it has some, else under its general
    /// `texts`; everything else shared (estimator, outside requirements).
    public func localized(_ texts: PolicyTexts, language: String? = nil) -> FormPolicy {
        var settings = self.settings
        let own = language.flatMap { self.settings.textsByLanguage[$0] } ?? self.settings.texts
        settings.texts = own.over(texts)
        return FormPolicy(settings, commonPasswords: commonPasswordsOverride, strengthEstimator: strengthEstimator,
                            usernameProblem: usernameProblem, lookups: lookups, language: language)
    }

    /// The rules of a form that sets a new password for `account` (account recovery): the
    /// password fields alone, in these rules' words and with their outside requirements, and
    /// passwords built on the account's username or address refused (`password.common`).
    public func newPassword(for account: AccountContext) -> FormPolicy {
        var settings = self.settings
        settings.fields = settings.fields.filter { $0.kind == .password || $0.kind == .confirm }
        return FormPolicy(settings, commonPasswords: commonPasswordsOverride, strengthEstimator: strengthEstimator,
                            usernameProblem: usernameProblem, lookups: lookups, language: language, account: account)
    }

    /// The rules of a form that gives `account` a new address (`/account/email`): the email
    /// field alone, with the sign-up form's checks (its format, the typo suggestion, disposable
    /// domains, deliverability when looked up).
    public func newEmail(for account: AccountContext) -> FormPolicy {
        var settings = self.settings
        settings.fields = settings.fields.filter { $0.kind == .email }
        // No password on this form: nothing to compare with the current one.
        let context = AccountContext(username: account.username, email: account.email, hasPassword: false)
        return FormPolicy(settings, commonPasswords: commonPasswordsOverride, strengthEstimator: strengthEstimator,
                            usernameProblem: usernameProblem, lookups: lookups, language: language, account: context)
    }

    /// The same rules with the outside requirements `kinds` names: the app's policy has
    /// exactly the ones its services can answer. Itself when they are the ones it has.
    public func lookingUp(_ kinds: Lookups.Kinds) -> FormPolicy {
        guard kinds != lookups else { return self }
        return FormPolicy(settings, commonPasswords: commonPasswordsOverride, strengthEstimator: strengthEstimator,
                            usernameProblem: usernameProblem, lookups: kinds, language: language, account: account)
    }

    /// The password as its rules see it, given the other fields it must not be based on.
    public func passwordCandidate(password: String, username: String, email: String) -> PasswordCandidate {
        passwordCandidate(password: password, context: contextWords(username: username, email: email))
    }

    /// The words a password must not be based on, for this person on this site.
    public func contextWords(username: String, email: String) -> ContextWords {
        ContextWords(username: username, email: email, serviceName: settings.serviceName, siteWords: settings.contextWords)
    }

    /// The password as its rules see it, given its context words.
    public func passwordCandidate(password: String, context: ContextWords) -> PasswordCandidate {
        let normalized = password.canonicallyComposed
        let estimate = normalized.isEmpty
            ? .none : strengthEstimator.strength(of: normalized, userInputs: context.all)
        return PasswordCandidate(password: normalized, context: context, strength: localized(estimate))
    }

    /// The estimator's label and advice in the policy's language.
    private func localized(_ strength: PasswordStrength) -> PasswordStrength {
        let texts = settings.texts
        // No advice (a strong password, or an empty one) and the label as estimated: nothing
        // to say in words, so no copy per keystroke.
        if strength.warning.isEmpty, strength.suggestions.isEmpty,
           strength.label == texts(PolicyText.strengthLabel(score: strength.score)) {
            return strength
        }
        return PasswordStrength(
            score: strength.score, label: texts(PolicyText.strengthLabel(score: strength.score)),
            warning: strength.warning.isEmpty ? "" : texts.feedback(strength.warning),
            suggestions: strength.suggestions.map(texts.feedback))
    }

    private static func safetyCheck(_ problem: @escaping @Sendable (String) -> String?, in texts: PolicyTexts) -> Check<String> {
        Check(id: "username.safe", message: { problem($0).map(texts.feedback) ?? "" }, isPassed: { problem($0) == nil })
    }

    /// ICU's verdict on a username as a message, nil when the name is safe.
    public static let unsafeUsernameMessage: @Sendable (String) -> String? = { username in
        UsernameSafetyChecker().problem(in: username)?.textKey
    }

    /// Whether a name is reserved for the site itself (compared in canonical form).
    public func isReserved(_ username: String) -> Bool {
        reservedCanonicalNames.contains(Username.canonical(username))
    }

    /// A field's checklist in display (and priority) order.
    public func requirements(for field: SignupField) -> [Requirement] {
        checklists[field] ?? []
    }

    /// The asynchronous "not already taken" rule, answered by `check`; only names that pass
    /// the synchronous username rules are checked.
    public func usernameAvailabilityRule(
        check: @escaping @Sendable (String) -> AnyPublisher<RequirementState, Never>
    ) -> AsyncRule<String> {
        username.asyncRule(id: usernameAvailability.id, text: usernameAvailability.text, check: check)
    }

    /// Every requirement of the form, field by field in page order.
    public var allRequirements: [Requirement] {
        fields.flatMap { requirements(for: $0.field) }
    }

    /// The field a protocol name means, if the form has one by that name.
    public func field(named name: String) -> SignupField? {
        let field = SignupField(rawValue: name)
        return positions[field] == nil ? nil : field
    }

    /// The field's declaration and words in this language.
    public func formField(_ field: SignupField) -> FormField? {
        positions[field].map { fields[$0] }
    }

    /// Built once: every edit reads them to name its requirement states.
    private static func checklists(
        username: FieldRules<String>, availability: Requirement, email: FieldRules<String>, deliverable: Requirement?,
        password: FieldRules<PasswordCandidate>, breach: Requirement?, notCurrent: Requirement?,
        confirm: FieldRules<PasswordConfirmation>
    ) -> [SignupField: [Requirement]] {
        [.username: username.requirements + [availability], .email: email.requirements + (deliverable.map { [$0] } ?? []),
         .password: password.requirements + (breach.map { [$0] } ?? []) + (notCurrent.map { [$0] } ?? []),
         .confirm: confirm.requirements]
    }

    /// The asynchronous `email.deliverable` rule, if DNS checks are on, without its check
    /// (the evaluation is given the answer). Only addresses that pass the email's own rules
    /// are looked up. Built once in `init`: every evaluation (every keystroke) reads it.
    public let emailDeliverabilityRule: AsyncRule<String>?

    /// The same rule asking `checker`: the view model's pipeline (one question per debounced
    /// address).
    public func emailDeliverabilityRule(checkingWith checker: any MailDomainChecking) -> AsyncRule<String>? {
        guard let emailDeliverable else { return nil }
        return email.asyncRule(id: emailDeliverable.id, text: emailDeliverable.text, check: { checker.state(of: $0) })
    }

    /// What the email field says when `email.deliverable` is unmet.
    func deliverableMessage(for email: String) -> String {
        settings.texts(.emailDeliverableMessage, ["domain": EmailAddress.domain(of: email) ?? email])
    }

    /// "ada@gmail.com" for "ada@gmial.com": a likely typo's correction, or nil.
    public func emailSuggestion(for email: String) -> String? {
        settings.emailSuggestions.suggestion(for: email)
    }

    /// The asynchronous `password.breached` rule over the password as typed, asking
    /// `checker`, if the rules have it. Only passwords long enough to be accepted are looked
    /// up (one look-up per debounced password, none for the first keystrokes).
    public func passwordBreachRule(checkingWith checker: BreachedPasswordChecker) -> AsyncRule<String>? {
        lengthGatedRule(passwordBreach) { checker.state(of: $0) }
    }

    /// An asynchronous rule over the password as typed, asked only about passwords long
    /// enough to be accepted; nil without its requirement.
    private func lengthGatedRule(_ requirement: Requirement?,
                                 check: @escaping @Sendable (String) -> AnyPublisher<RequirementState, Never>) -> AsyncRule<String>? {
        guard let requirement else { return nil }
        let minimum = settings.passwordMinimumLength
        return AsyncRule(id: requirement.id, text: requirement.text,
                         isEligible: { TextLength.codePoints($0.canonicallyComposed) >= minimum }, check: check)
    }

    /// The same rule over the password's candidate, for evaluating its field; built once in
    /// `init`, since every evaluation (every keystroke) reads it.
    let passwordBreachCandidateRule: AsyncRule<PasswordCandidate>?

    /// `password.not_current` over the password as typed, asking `checker`, on a new-password
    /// form for an account with a password: only passwords long enough to be accepted are
    /// checked (each check is an argon2id verification).
    public func passwordNotCurrentRule(checkingWith checker: any CurrentPasswordChecking) -> AsyncRule<String>? {
        lengthGatedRule(passwordNotCurrent) { checker.state(of: $0) }
    }

    /// The same over the candidate, for evaluating the field (its answer is given).
    let passwordNotCurrentCandidateRule: AsyncRule<PasswordCandidate>?

    /// The password field's messages for its asynchronous requirements on a new-password form,
    /// in their order: the breach's (when unmet), then "that is your current password".
    func newPasswordExtraMessages(for password: FieldEvaluation<PasswordCandidate>,
                                  breaches: BreachedPasswordChecker?) -> [String] {
        var messages: [String] = []
        let first = self.password.rules.count
        if passwordBreach != nil {
            let isUnmet = password.states.count > first && password.states[first] == .unmet
            messages.append(isUnmet ? breachMessage(for: password.value.password, checker: breaches) : "")
        }
        if passwordNotCurrent != nil { messages.append(notCurrentMessage) }
        return messages
    }

    /// An asynchronous password rule over the candidate whose answer the evaluation is given,
    /// asked about passwords long enough to be accepted.
    private static func lengthGatedCandidateRule(_ requirement: Requirement?, minimum: Int) -> AsyncRule<PasswordCandidate>? {
        guard let requirement else { return nil }
        return AsyncRule(id: requirement.id, text: requirement.text,
                         isEligible: { TextLength.codePoints($0.password) >= minimum },
                         check: { _ in Empty().eraseToAnyPublisher() })
    }

    /// 3861 as "3,861" (or "3.861" with "." as the separator).
    static func grouped(_ number: Int, separator: String) -> String {
        var digits = String(number).map(String.init)
        var index = digits.count - 3
        while index > 0 {
            digits.insert(separator, at: index)
            index -= 3
        }
        return digits.joined()
    }

    /// What the field says when `password.breached` is unmet: the count, kindly, if the
    /// checker remembers it.
    func breachMessage(for password: String, checker: BreachedPasswordChecker?) -> String {
        switch checker?.rememberedVerdict(for: password) {
        case .seen(1)?:
            // "(1 times so far)" reads as a mistake; once has its own sentence.
            return settings.texts(.passwordBreachedOnce)
        case .seen(let times)?:
            let count = Self.grouped(times, separator: settings.texts(.numberGroupSeparator))
            return settings.texts(.passwordBreachedMessage, ["count": count])
        default:
            return settings.texts(.passwordBreachedListed)
        }
    }
}

extension FormPolicy {
    /// `Policy.classic`'s rules.
    public static func classic(
        commonPasswords: CommonPasswords? = nil,
        strengthEstimator: any PasswordStrengthEstimating = ZxcvbnStrengthEstimator(),
        usernameProblem: (@Sendable (String) -> String?)? = nil
    ) -> FormPolicy {
        FormPolicy(.classic, commonPasswords: commonPasswords, strengthEstimator: strengthEstimator,
                     usernameProblem: usernameProblem)
    }
}
