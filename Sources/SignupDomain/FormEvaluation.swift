import Foundation
import ReactiveValidation
import SignupWire
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// Which credential the person chose, and whether the passkey exists yet: an input of the
/// evaluation like the fields' values.
public struct CredentialChoice: Equatable, Sendable {
    public var method: CredentialMethod
    /// A passkey was made on this form and verified by the server (or, with `provider`,
    /// the provider's sign-in is held: always true then).
    public var passkeyCreated: Bool

    public init(method: CredentialMethod, passkeyCreated: Bool = false) {
        self.method = method
        self.passkeyCreated = passkeyCreated
    }

    /// The form as it starts: a password.
    public static let password = CredentialChoice(method: .password)
}

/// The sign-up form's requirement states, field verdicts and password strength for one set
/// of inputs. The live view model and the submit check both build it, so they can never
/// disagree.
public struct FormEvaluation: Equatable, Sendable {
    /// One evaluation's parts, behind one reference (`SharedValue`): each keystroke's
    /// evaluation passes through OpenCombine's generic operators (`map`, `removeDuplicates`,
    /// the `@Published` output, the session's sink), and as a struct of nine arrays,
    /// dictionaries and strings every copy retained each of them. Equality is the synthesized
    /// one: the same reference, else every part.
    private struct Parts: Equatable, Sendable {
        /// The requirement ids this evaluation has states for, in the order the policy fixes
        /// for its credential (one array shared by every evaluation), and their states (nil
        /// for a requirement its field gave no state). Arrays, not a dictionary: every
        /// keystroke builds an evaluation and compares it with the last (`removeDuplicates`),
        /// and hashing the ids cost more than judging the values.
        var requirementIDs: [String]
        var states: [RequirementState?]
        /// The fields with a verdict (the policy's, shared) and their verdicts.
        var validatedFields: [SignupField]
        var validations: [FieldValidation]
        var strength: PasswordStrength
        var isValid: Bool
        var fieldOrder: [SignupField]
        var suggestions: [SignupField: String]
        var credential: CredentialMethod
    }

    private let shared: SharedValue<Parts>
    private var parts: Parts { shared.value }

    private var requirementIDs: [String] { parts.requirementIDs }
    private var states: [RequirementState?] { parts.states }
    private var validatedFields: [SignupField] { parts.validatedFields }
    private var validations: [FieldValidation] { parts.validations }
    public var strength: PasswordStrength { parts.strength }
    /// True when every requirement is met and no field failed a check off the checklist.
    public var isValid: Bool { parts.isValid }
    /// The form's fields in page order (the policy's).
    public var fieldOrder: [SignupField] { parts.fieldOrder }
    /// A likely correction of a field's value ("Did you mean ada@gmail.com?"), for fields
    /// whose problems are shown. Never a problem: it does not touch `isValid`.
    public var suggestions: [SignupField: String] { parts.suggestions }
    /// Password or passkey: whose requirements `requirementStates` holds.
    public var credential: CredentialMethod { parts.credential }

    /// Every requirement's state by id.
    public var requirementStates: [String: RequirementState] {
        var byID = [String: RequirementState](minimumCapacity: states.count)
        for (id, state) in zip(requirementIDs, states) {
            if let state { byID[id] = state }
        }
        return byID
    }

    /// Every field's verdict by field.
    public var fieldValidations: [SignupField: FieldValidation] {
        Dictionary(zip(validatedFields, validations), uniquingKeysWith: { $1 })
    }

    /// One field's verdict (nil for a field the form does not judge with this credential).
    public func validation(of field: SignupField) -> FieldValidation? {
        validatedFields.lastIndex(of: field).map { validations[$0] }
    }

    /// Each field's shown problem, in page order.
    public var problems: [(field: SignupField, message: String)] {
        fieldOrder.compactMap { field in
            let message = validation(of: field)?.message ?? ""
            return message.isEmpty ? nil : (field, message)
        }
    }

    init(
        policy: FormPolicy,
        username: FieldEvaluation<String>,
        email: FieldEvaluation<String>,
        password: FieldEvaluation<PasswordCandidate>,
        confirm: FieldEvaluation<PasswordConfirmation>,
        declared: [FieldEvaluation<String>],
        shownFields: Set<SignupField>,
        suggestions: [SignupField: String],
        credential: CredentialChoice,
        breaches: BreachedPasswordChecker?
    ) {
        // With a passkey, the password fields and their checklist leave the form and
        // `passkey.created` takes their place; everything else is judged as always.
        // A provider's sign-in stands in the passkey's place the same way, with
        // `provider.signed_in` (met: the provider answered before the form opened).
        let usesPasskey = credential.method != .password
        let order = policy.evaluationOrder(for: credential.method)
        var states: [RequirementState?] = []
        states.reserveCapacity(order.requirementIDs.count)
        /// A field's states, one per requirement of its checklist (`count`), in checklist order.
        func add(_ fieldStates: [RequirementState], count: Int) {
            for index in 0..<count { states.append(index < fieldStates.count ? fieldStates[index] : nil) }
        }
        let counts = policy.builtInRequirementCounts
        add(username.states, count: counts.username)
        add(email.states, count: counts.email)
        if usesPasskey {
            states.append(credential.passkeyCreated ? .met : .unmet)
        } else {
            add(password.states, count: counts.password)
            add(confirm.states, count: counts.confirm)
        }
        // In the order of `FormPolicy.evaluationOrder`'s fields.
        var validations: [FieldValidation] = []
        validations.reserveCapacity(order.fields.count)
        validations.append(policy.username.validation(
            of: username, extraMessages: [policy.usernameTakenMessage], isShown: shownFields.contains(.username)))
        validations.append(policy.email.validation(
            of: email,
            extraMessages: policy.emailDeliverable == nil ? []
                : [email.states.last == .unmet ? policy.deliverableMessage(for: email.value) : ""],
            isShown: shownFields.contains(.email)))
        if usesPasskey {
            validations.append(.idle)
            validations.append(.idle)
            validations.append(credential.passkeyCreated ? .valid
                : shownFields.contains(.passkey) ? .invalid(reason: policy.passkeyMissingMessage) : .idle)
        } else {
            validations.append(policy.password.validation(
                of: password,
                // Built only when the breach rule is the one unmet: it reads the remembered count.
                extraMessages: policy.passwordNotCurrent != nil ? policy.newPasswordExtraMessages(for: password, breaches: breaches)
                    : policy.passwordBreach == nil ? []
                    : [password.states.last == .unmet ? policy.breachMessage(for: password.value.password, checker: breaches) : ""],
                isShown: shownFields.contains(.password)))
            validations.append(policy.confirm.validation(of: confirm, isShown: shownFields.contains(.confirm)))
        }
        var declaredValid = true
        for (field, evaluation) in zip(policy.declaredFields, declared) {
            add(evaluation.states, count: field.rules.rules.count)
            validations.append(field.rules.validation(of: evaluation, isShown: shownFields.contains(field.field)))
            declaredValid = declaredValid && evaluation.allMet
        }
        let credentialMet = usesPasskey ? credential.passkeyCreated : password.allMet && confirm.allMet
        shared = SharedValue(Parts(
            requirementIDs: order.requirementIDs, states: states,
            validatedFields: order.fields, validations: validations,
            strength: usesPasskey ? .none : password.value.strength,
            // A form about an account judges only the fields it has (`FormPolicy.judges`).
            isValid: (!policy.judges.username || username.allMet) && (!policy.judges.email || email.allMet)
                && (!policy.judges.credential || credentialMet) && declaredValid,
            fieldOrder: usesPasskey ? policy.passkeyFieldOrder : policy.fieldOrder,
            suggestions: suggestions, credential: credential.method))
    }
}

extension FormEvaluation {
    /// The requirements of `policy`'s live checklist this evaluation judged and found not met
    /// (unmet, or still being checked), in the checklist's order: what stopped a form that
    /// ends here (the funnel's `abandoned_unmet`).
    public func unmetRequirements(of policy: FormPolicy) -> [String] {
        let states = requirementStates
        return policy.liveRequirementOrder.filter { id in states[id].map { $0 != .met } ?? false }
    }
}

extension FormEvaluation {
    /// The wire snapshot of this state at `rev`: every field has a message ("" when hidden).
    public func snapshot(rev: Int) -> SignupSnapshot {
        SignupSnapshot(
            rev: rev, requirements: requirementStates,
            messages: Dictionary(uniqueKeysWithValues: fieldOrder.map {
                ($0.rawValue, validation(of: $0)?.message ?? "")
            }),
            strength: strength, submitEnabled: isValid,
            suggestions: suggestions.isEmpty ? [:] : Dictionary(uniqueKeysWithValues: suggestions.map { ($0.key.rawValue, $0.value) }),
            credential: credential)
    }
}

extension FormEvaluation {
    /// The events that take a stream that was shown `previous` to `self`, carrying `rev`, in
    /// the protocol's order: exactly `snapshot(rev:).changes(since:…)` of the two snapshots,
    /// with `policy`'s live orders, but read from the evaluations' arrays. Building and
    /// diffing two snapshots' dictionaries cost about 5,000 instructions per edit (issue 24);
    /// `FormEvaluationChangesTests` checks the two agree. Both evaluations are `policy`'s.
    public func changes(since previous: FormEvaluation, rev: Int, policy: FormPolicy) -> [SignupEvent] {
        let order = policy.evaluationOrder(for: credential)
        // Both in `order`'s shape (the arrays are the policy's own, so these compare buffers).
        guard credential == previous.credential,
              requirementIDs == order.requirementIDs, previous.requirementIDs == order.requirementIDs,
              validatedFields == order.fields, previous.validatedFields == order.fields else {
            // The person switched between password and passkey (rare): the checklists differ.
            return snapshot(rev: rev).changes(
                since: previous.snapshot(rev: rev), requirementOrder: policy.liveRequirementOrder,
                fieldOrder: policy.liveFieldOrder.map(\.rawValue))
        }
        var events: [SignupEvent] = []
        for (id, position) in order.liveRequirements {
            if let state = states[position], state != previous.states[position] {
                events.append(.requirement(id: id, state: state, rev: rev))
            }
        }
        for (field, position) in order.liveMessages {
            guard let position else { continue }  // not on this credential's page: "" before and after
            let text = validations[position].message
            if text != previous.validations[position].message {
                events.append(.message(field: field, text: text, rev: rev))
            }
        }
        if suggestions != previous.suggestions {
            for field in policy.liveFieldOrder where suggestions[field] != previous.suggestions[field] {
                events.append(.suggestion(field: field.rawValue, value: suggestions[field] ?? "", rev: rev))
            }
        }
        if strength != previous.strength { events.append(.strength(strength, rev: rev)) }
        if isValid != previous.isValid { events.append(.submit(enabled: isValid, rev: rev)) }
        return events
    }
}

extension FormPolicy {
    /// Evaluates the whole form in one step.
    ///
    /// - Parameters:
    ///   - availability: the asynchronous "not already taken" rule.
    ///   - answer: its latest answer; it counts only while it is for `username` as it is now.
    ///   - shownFields: fields whose problems may be shown.
    ///   - cache: remembers each field's last evaluation between calls (the view model's),
    ///     so only the fields whose inputs changed are evaluated again.
    ///   - values: every field's value in page order (`fieldOrder`), as the view model holds
    ///     them: no dictionary is built per keystroke.
    ///   - notCurrentAnswer: on a new-password form, the latest "not the current password" answer.
    public func evaluate(
        inPageOrder values: [String],
        availability: AsyncRule<String>, answer: AsyncAnswer<String>?, shownFields: Set<SignupField>,
        breachAnswer: AsyncAnswer<String>? = nil, deliverableAnswer: AsyncAnswer<String>? = nil,
        cache: FormEvaluationCache? = nil, credential: CredentialChoice = .password,
        breaches: BreachedPasswordChecker? = nil, notCurrentAnswer: AsyncAnswer<String>? = nil
    ) -> FormEvaluation {
        func value(at position: Int?) -> String {
            guard let position, position < values.count else { return "" }
            return values[position]
        }
        // What the form does not have is the account's (a new-password form's identity: the
        // words its password is judged against); what it has is as typed (a new address).
        let username = builtInPositions.username.map { value(at: $0) } ?? account?.username ?? ""
        let email = builtInPositions.email.map { value(at: $0) } ?? account?.email ?? ""
        let password = value(at: builtInPositions.password), confirm = value(at: builtInPositions.confirm)
        let breachRule = passwordBreachCandidateRule
        let deliverableRule = emailDeliverabilityRule
        // Shown with the field's problems: not while the person is still typing the domain.
        let suggests = shownFields.contains(.email) && builtInPositions.email != nil
        func breach(_ candidate: PasswordCandidate) -> AsyncAnswer<PasswordCandidate>? {
            // The answer counts only while it is for the password as it is now.
            guard let breachAnswer, breachAnswer.value == password else { return nil }
            return AsyncAnswer(value: candidate, state: breachAnswer.state)
        }
        func notCurrent(_ candidate: PasswordCandidate) -> AsyncAnswer<PasswordCandidate>? {
            guard let notCurrentAnswer, notCurrentAnswer.value == password else { return nil }
            return AsyncAnswer(value: candidate, state: notCurrentAnswer.state)
        }
        /// The password's evaluation: the breach rule alone (the sign-up form, the typing
        /// path), or with "not the current password" after it (a new-password form).
        func evaluatePassword(_ candidate: PasswordCandidate, _ breachAnswer: AsyncAnswer<PasswordCandidate>?,
                              _ notCurrentAnswer: AsyncAnswer<PasswordCandidate>?) -> FieldEvaluation<PasswordCandidate> {
            guard let notCurrentRule = passwordNotCurrentCandidateRule else {
                return self.password.evaluate(candidate, asyncRule: breachRule, answer: breachAnswer)
            }
            return self.password.evaluate(
                candidate, asyncRules: (breachRule.map { [$0] } ?? []) + [notCurrentRule],
                answers: (breachRule == nil ? [] : [breachAnswer]) + [notCurrentAnswer])
        }
        guard let cache else {
            let candidate = passwordCandidate(password: password, username: username, email: email)
            return FormEvaluation(
                policy: self,
                username: self.username.evaluate(username, asyncRule: availability, answer: answer),
                email: self.email.evaluate(email, asyncRule: deliverableRule, answer: deliverableAnswer),
                password: evaluatePassword(candidate, breach(candidate), notCurrent(candidate)),
                confirm: self.confirm.evaluate(PasswordConfirmation(
                    password: candidate.password, confirm: confirm.canonicallyComposed)),
                declared: declaredFields.map { $0.rules.evaluate(value(at: $0.position)) },
                shownFields: shownFields,
                suggestions: suggests ? emailSuggestion(for: email).map { [.email: $0] } ?? [:] : [:],
                credential: credential, breaches: breaches)
        }
        let candidate = cache.candidates.candidate(in: self, password: password, username: username, email: email)
        let confirmation = PasswordConfirmation(password: candidate.password, confirm: confirm.canonicallyComposed)
        let passwordAnswer = breach(candidate)
        let notCurrentPasswordAnswer = passwordNotCurrentCandidateRule == nil ? nil : notCurrent(candidate)
        return FormEvaluation(
            policy: self,
            username: cache.username.value(for: .init(value: username, answer: answer)) {
                self.username.evaluate(username, asyncRule: availability, answer: answer)
            },
            email: cache.email.value(for: .init(value: email, answer: deliverableAnswer)) {
                self.email.evaluate(email, asyncRule: deliverableRule, answer: deliverableAnswer)
            },
            password: cache.password.value(for: .init(candidate: candidate, answer: passwordAnswer,
                                                      notCurrent: notCurrentPasswordAnswer)) {
                evaluatePassword(candidate, passwordAnswer, notCurrentPasswordAnswer)
            },
            confirm: cache.confirm.value(for: confirmation) { self.confirm.evaluate(confirmation) },
            declared: declaredFields.enumerated().map { slot, field in
                let text = value(at: field.position)
                return cache.declared(slot, value: text) { field.rules.evaluate(text) }
            },
            shownFields: shownFields,
            suggestions: suggests ? cache.emailSuggestion.value(for: email) { emailSuggestion(for: email) }
                .map { [.email: $0] } ?? [:] : [:],
            credential: credential, breaches: breaches)
    }

    /// The same with the values by field (a field left out is empty).
    public func evaluate(
        values: [SignupField: String],
        availability: AsyncRule<String>, answer: AsyncAnswer<String>?, shownFields: Set<SignupField>,
        breachAnswer: AsyncAnswer<String>? = nil, deliverableAnswer: AsyncAnswer<String>? = nil,
        cache: FormEvaluationCache? = nil, credential: CredentialChoice = .password,
        breaches: BreachedPasswordChecker? = nil, notCurrentAnswer: AsyncAnswer<String>? = nil
    ) -> FormEvaluation {
        evaluate(inPageOrder: fieldOrder.map { values[$0] ?? "" }, availability: availability, answer: answer,
                 shownFields: shownFields, breachAnswer: breachAnswer, deliverableAnswer: deliverableAnswer, cache: cache,
                 credential: credential, breaches: breaches, notCurrentAnswer: notCurrentAnswer)
    }

    /// The same for the built-in four alone (declared fields empty).
    public func evaluate(
        username: String, email: String, password: String, confirm: String,
        availability: AsyncRule<String>, answer: AsyncAnswer<String>?, shownFields: Set<SignupField>,
        breachAnswer: AsyncAnswer<String>? = nil, cache: FormEvaluationCache? = nil
    ) -> FormEvaluation {
        evaluate(values: [.username: username, .email: email, .password: password, .confirm: confirm],
                 availability: availability, answer: answer, shownFields: shownFields,
                 breachAnswer: breachAnswer, cache: cache)
    }

    /// The form as a page view starts: every field empty, nothing shown, no answer yet.
    /// A session whose person has not typed has exactly this state, so it needs no view
    /// model until the first edit.
    /// Evaluated once, when the policy is made: every view model starts from it, and it was
    /// a whole evaluation (the strength estimate of "" included) per page view that was typed in.
    public var initialEvaluation: FormEvaluation {
        initialState ?? evaluateInitialState()
    }

    func evaluateInitialState() -> FormEvaluation {
        evaluate(values: [:],
                 availability: usernameAvailabilityRule { _ in Empty().eraseToAnyPublisher() },
                 answer: nil, shownFields: [])
    }

    /// Evaluates a complete submission with every problem shown, given the availability
    /// answer for its username (`met` free, `unmet` taken). The submit check uses this.
    /// `breach` is `password.breached`'s state for `password` (`Lookups.breachStateNow`),
    /// when a breach source is configured, and `breaches` the checker that remembers how often
    /// it was seen; `deliverable` is `email.deliverable`'s, when DNS checks are on.
    /// `credential` is the credential the form chose, with whether its session holds a
    /// verified passkey.
    /// `notCurrent`: on a new-password form, `password.not_current`'s state for `password`.
    public func evaluateSubmission(
        values: [SignupField: String], usernameAvailability: RequirementState, breach: RequirementState? = nil,
        deliverable: RequirementState? = nil, credential: CredentialChoice = .password,
        breaches: BreachedPasswordChecker? = nil, notCurrent: RequirementState? = nil
    ) -> FormEvaluation {
        // The answer is already known, so the rule's check is never run.
        let availability = usernameAvailabilityRule { _ in Empty().eraseToAnyPublisher() }
        return evaluate(
            values: values,
            availability: availability, answer: AsyncAnswer(value: values[.username] ?? "", state: usernameAvailability),
            shownFields: everyField,
            breachAnswer: breach.map { AsyncAnswer(value: values[.password] ?? "", state: $0) },
            deliverableAnswer: deliverable.map { AsyncAnswer(value: values[.email] ?? "", state: $0) },
            credential: credential, breaches: breaches,
            notCurrentAnswer: notCurrent.map { AsyncAnswer(value: values[.password] ?? "", state: $0) })
    }

    /// The same for the built-in four alone (declared fields empty).
    public func evaluateSubmission(
        username: String, email: String, password: String, confirm: String, usernameAvailability: RequirementState,
        breach: RequirementState? = nil, breaches: BreachedPasswordChecker? = nil
    ) -> FormEvaluation {
        evaluateSubmission(values: [.username: username, .email: email, .password: password, .confirm: confirm],
                           usernameAvailability: usernameAvailability, breach: breach, breaches: breaches)
    }
}
