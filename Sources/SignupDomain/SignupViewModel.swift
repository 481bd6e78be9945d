import CombineSchedulers
import Foundation
import ReactiveValidation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// One page view's live sign-up form, in the MVVM style of the source articles: `@Published`
/// inputs flow through `map` / `combineLatest` / `removeDuplicates` pipelines into
/// `@Published` outputs.
///
/// Not thread-safe by design: set inputs and read outputs on the scheduler's queue only.
/// Everything synchronous settles before an input's setter returns; the availability answer
/// arrives later on the scheduler.
public final class SignupViewModel {
    /// One input of the form: a declared field's value as the person typed it.
    public final class FieldInput {
        public let field: SignupField
        @Published public var value = ""

        init(field: SignupField) {
            self.field = field
        }
    }

    // MARK: Inputs

    /// One input publisher per declared field, in page order.
    public let inputs: [FieldInput]
    private let inputsByField: [SignupField: FieldInput]
    /// Fields the person has left at least once; their problems may be shown.
    @Published public var touchedFields: Set<SignupField> = []
    /// After a submit attempt every field's problems are shown.
    @Published public var submitAttempted = false
    /// Password or passkey, and whether the passkey was made: the checklist follows it.
    @Published public var credential = CredentialChoice.password

    /// The built-in fields' inputs by name, as the source articles' view models spell them.
    public var username: String {
        get { value(of: .username) }
        set { setValue(newValue, for: .username) }
    }
    public var email: String {
        get { value(of: .email) }
        set { setValue(newValue, for: .email) }
    }
    public var password: String {
        get { value(of: .password) }
        set { setValue(newValue, for: .password) }
    }
    public var confirm: String {
        get { value(of: .confirm) }
        set { setValue(newValue, for: .confirm) }
    }

    // MARK: Output

    /// The whole form's settled state: every requirement, every field's verdict, the
    /// password strength and whether Sign-up is enabled. One value, published once per
    /// distinct result, so a subscriber never sees one part updated and another not yet.
    @Published public private(set) var form: FormEvaluation

    /// Every requirement's state by id.
    public var requirementStates: [String: RequirementState] { form.requirementStates }
    /// Every field's verdict; its `message` is what the page shows under the field.
    public var fieldValidations: [SignupField: FieldValidation] { form.fieldValidations }
    public var strength: PasswordStrength { form.strength }
    /// True exactly when every requirement is met and nothing else refuses the form.
    public var isSubmitEnabled: Bool { form.isValid }

    public let policy: FormPolicy

    /// - Parameters:
    ///   - availabilityDebounce: how long the username must stay unchanged before it is
    ///     looked up, so a burst of keystrokes costs one query.
    public init(
        policy: FormPolicy,
        availabilityChecker: any UsernameAvailabilityChecking,
        lookups: Lookups = .none,
        scheduler: AnySchedulerOf<DispatchQueue>,
        availabilityDebounce: DispatchQueue.SchedulerTimeType.Stride = .milliseconds(300)
    ) {
        self.policy = policy
        form = policy.initialEvaluation
        inputs = policy.fieldOrder.map(FieldInput.init(field:))
        inputsByField = Dictionary(uniqueKeysWithValues: inputs.map { ($0.field, $0) })

        let availability = policy.usernameAvailabilityRule { availabilityChecker.availability(of: $0) }
        // A sign-up form always has these two (PolicyFile refuses a file without them); a form
        // about an account (`policy.account`) has some of its fields: the password alone, or
        // the address alone. A `Policy` made in code without them is a programming error,
        // said as one.
        let password = inputsByField[.password]
        guard password != nil && inputsByField[.username] != nil || policy.account != nil else {
            preconditionFailure("A sign-up policy declares the username and password fields; this one has \(policy.fieldOrder.map(\.rawValue))")
        }
        // No username is looked up on a new-password form: the account's own is given.
        let availabilityAnswers: AnyPublisher<AsyncAnswer<String>?, Never> = inputsByField[.username].map {
            $0.$value.latestAnswers(for: availability, debounce: availabilityDebounce, scheduler: scheduler)
        } ?? Just(nil).eraseToAnyPublisher()
        // "Not in a known breach", when configured: the same debounced, latest-only pipeline,
        // so a burst of keystrokes costs one look-up of the password as it settled.
        let breaches = lookups.breachedPasswords
        let breachAnswers: AnyPublisher<AsyncAnswer<String>?, Never> = breaches.flatMap(policy.passwordBreachRule).flatMap { rule in
            password.map { $0.$value.latestAnswers(for: rule, debounce: availabilityDebounce, scheduler: scheduler) }
        } ?? Just(nil).eraseToAnyPublisher()

        // "Can receive mail", when DNS checks are on: the same pipeline over the email.
        let deliverableAnswers: AnyPublisher<AsyncAnswer<String>?, Never> = lookups.mailDomains.flatMap(policy.emailDeliverabilityRule).flatMap { rule in
            inputsByField[.email].map { $0.$value.latestAnswers(for: rule, debounce: availabilityDebounce, scheduler: scheduler) }
        } ?? Just(nil).eraseToAnyPublisher()
        // "Not your current password", on a new-password form: an argon2id check per pause in
        // typing, the same debounced, latest-only pipeline.
        let notCurrentAnswers: AnyPublisher<AsyncAnswer<String>?, Never> = lookups.currentPassword
            .flatMap(policy.passwordNotCurrentRule).flatMap { rule in
                password.map { $0.$value.latestAnswers(for: rule, debounce: availabilityDebounce, scheduler: scheduler) }
            } ?? Just(nil).eraseToAnyPublisher()
        // One reference, not a tuple of three optionals: it rides through the combination on
        // every keystroke, and a tuple of generic structs was copied there through value
        // witnesses (a 1.2 % rise in instructions per edit when the third answer came).
        let outsideAnswers = Publishers.CombineLatest3(breachAnswers, deliverableAnswers, notCurrentAnswers)
            .map(OutsideAnswers.init)

        // The whole form is evaluated in one step per change. Separate pipelines per field
        // would each subscribe to the password, and OpenCombine calls a publisher's
        // subscribers in no fixed order: between two of them the outputs would mix old and
        // new states (e.g. the button enabling for an instant on an edit that keeps the form
        // invalid). Availability answers arrive later, on the scheduler, never mid-edit.
        let cache = FormEvaluationCache()
        // The first combination arrives while this initializer subscribes, every input at its
        // default: it is the form's initial state, which the policy evaluated once for every
        // form (`initialEvaluation`, what `form` starts as). Evaluating it again cost each
        // page view someone types in a whole evaluation (issue 24).
        var isFirstCombination = true
        let values = Publishers.CombineLatestMany(inputs.map(\.$value))
        let visibility = Publishers.CombineLatest3($touchedFields, $submitAttempted, $credential)
        Publishers.CombineLatest4(
            values,
            availabilityAnswers,
            outsideAnswers,
            visibility
        )
        .map { values, answer, outsideAnswers, visibility in
            if isFirstCombination {
                isFirstCombination = false
                return policy.initialEvaluation
            }
            return policy.evaluate(
                inPageOrder: values,
                availability: availability, answer: answer,
                shownFields: visibility.1 ? policy.everyField : visibility.0,
                breachAnswer: outsideAnswers.breach, deliverableAnswer: outsideAnswers.deliverable, cache: cache,
                credential: visibility.2, breaches: breaches, notCurrentAnswer: outsideAnswers.notCurrent)
        }
        .removeDuplicates()
        // Into `form`'s own publisher, Combine's way for a `@Published` output: no
        // subscription to keep and no reference back to the view model (a weak one gave
        // it a side table, and every retain of it the slow path).
        .assign(to: &$form)
    }

    /// The value of a field by its protocol name ("" for a field the form does not have).
    public func value(of field: SignupField) -> String {
        inputsByField[field]?.value ?? ""
    }

    /// Sets a field by its protocol name; a field the form does not have is ignored.
    public func setValue(_ value: String, for field: SignupField) {
        inputsByField[field]?.value = value
    }
}

/// The latest answers from outside the process (the breach source, DNS, the current-password
/// check), held behind one reference for the view model's combination.
final class OutsideAnswers {
    let breach: AsyncAnswer<String>?
    let deliverable: AsyncAnswer<String>?
    let notCurrent: AsyncAnswer<String>?

    init(_ breach: AsyncAnswer<String>?, _ deliverable: AsyncAnswer<String>?, _ notCurrent: AsyncAnswer<String>?) {
        self.breach = breach
        self.deliverable = deliverable
        self.notCurrent = notCurrent
    }
}
