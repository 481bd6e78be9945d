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
    // MARK: Inputs

    @Published public var username = ""
    @Published public var email = ""
    @Published public var password = ""
    @Published public var confirm = ""
    /// Fields the person has left at least once; their problems may be shown.
    @Published public var touchedFields: Set<SignupField> = []
    /// After a submit attempt every field's problems are shown.
    @Published public var submitAttempted = false

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

    public let policy: SignupPolicy
    private var subscriptions = Set<AnyCancellable>()

    /// - Parameters:
    ///   - availabilityDebounce: how long the username must stay unchanged before it is
    ///     looked up, so a burst of keystrokes costs one query.
    public init(
        policy: SignupPolicy,
        availabilityChecker: any UsernameAvailabilityChecking,
        scheduler: AnySchedulerOf<DispatchQueue>,
        availabilityDebounce: DispatchQueue.SchedulerTimeType.Stride = .milliseconds(300)
    ) {
        self.policy = policy
        form = policy.initialEvaluation

        let availability = policy.usernameAvailabilityRule { availabilityChecker.availability(of: $0) }
        // "Not in a known breach", when configured: the same debounced, latest-only pipeline,
        // so a burst of keystrokes costs one look-up of the password as it settled.
        let breachAnswers: AnyPublisher<AsyncAnswer<String>?, Never> = policy.passwordBreachRule.map {
            $password.latestAnswers(for: $0, debounce: availabilityDebounce, scheduler: scheduler)
        } ?? Just(nil).eraseToAnyPublisher()

        // The whole form is evaluated in one step per change. Separate pipelines per field
        // would each subscribe to `$password`, and OpenCombine calls a publisher's
        // subscribers in no fixed order: between two of them the outputs would mix old and
        // new states (e.g. the button enabling for an instant on an edit that keeps the form
        // invalid). Availability answers arrive later, on the scheduler, never mid-edit.
        let cache = FormEvaluationCache()
        let inputs = Publishers.CombineLatest4($username, $email, $password, $confirm)
        let visibility = Publishers.CombineLatest($touchedFields, $submitAttempted)
        Publishers.CombineLatest4(
            inputs,
            $username.latestAnswers(for: availability, debounce: availabilityDebounce, scheduler: scheduler),
            breachAnswers,
            visibility
        )
        .map { inputs, answer, breachAnswer, visibility in
            let (username, email, password, confirm) = inputs
            return policy.evaluate(
                username: username, email: email, password: password, confirm: confirm,
                availability: availability, answer: answer,
                shownFields: visibility.1 ? Set(SignupField.allCases) : visibility.0,
                breachAnswer: breachAnswer, cache: cache)
        }
        .removeDuplicates()
        .sink { [weak self] evaluation in self?.form = evaluation }
        .store(in: &subscriptions)
    }

    /// The value of an input field by its protocol name.
    public func value(of field: SignupField) -> String {
        switch field {
        case .username: return username
        case .email: return email
        case .password: return password
        case .confirm: return confirm
        }
    }

    /// Sets an input field by its protocol name.
    public func setValue(_ value: String, for field: SignupField) {
        switch field {
        case .username: username = value
        case .email: email = value
        case .password: password = value
        case .confirm: confirm = value
        }
    }
}
