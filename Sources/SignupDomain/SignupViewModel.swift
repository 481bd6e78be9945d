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

    // MARK: Outputs

    /// Every requirement's state by id.
    @Published public private(set) var requirementStates: [String: RequirementState] = [:]
    /// Every field's verdict; its `message` is what the page shows under the field.
    @Published public private(set) var fieldValidations: [SignupField: FieldValidation] = [:]
    @Published public private(set) var strength = PasswordStrength.none
    /// True exactly when every requirement is met.
    @Published public private(set) var isSubmitEnabled = false

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
        for requirement in policy.allRequirements { requirementStates[requirement.id] = .unmet }
        for field in SignupField.allCases { fieldValidations[field] = .idle }

        let usernameRules = policy.username
        let availability = AsyncRule<String>(
            id: policy.usernameAvailability.id,
            text: policy.usernameAvailability.text,
            message: policy.usernameTakenMessage,
            isEligible: { usernameRules.allMet(by: $0) },
            check: { availabilityChecker.availability(of: $0) })

        bind(.username, rules: policy.username, extraMessages: [policy.usernameTakenMessage],
             evaluations: $username.validate(with: policy.username, asyncRule: availability,
                                             debounce: availabilityDebounce, scheduler: scheduler))
        bind(.email, rules: policy.email,
             evaluations: $email.validate(with: policy.email, debounce: availabilityDebounce, scheduler: scheduler))
        bind(.password, rules: policy.password,
             evaluations: $password.validate(with: policy.password, debounce: availabilityDebounce, scheduler: scheduler))
        bind(.confirm, rules: policy.confirm,
             evaluations: Publishers.CombineLatest($password, $confirm)
                .map(PasswordConfirmation.init)
                .validate(with: policy.confirm, debounce: availabilityDebounce, scheduler: scheduler))

        let estimator = policy.strengthEstimator
        $password
            .map { estimator.strength(of: $0) }
            .removeDuplicates()
            .assign(to: &$strength)

        $requirementStates
            .map { $0.values.allSatisfy { $0 == .met } }
            .removeDuplicates()
            .assign(to: &$isSubmitEnabled)
    }

    /// Wires one field: its requirement states into `requirementStates`, and its verdict
    /// into `fieldValidations` once the field may show problems.
    private func bind<Value>(
        _ field: SignupField,
        rules: FieldRules<Value>,
        extraMessages: [String] = [],
        evaluations: AnyPublisher<FieldEvaluation<Value>, Never>
    ) {
        let ids = policy.requirements(for: field).map(\.id)
        // Both pipelines below must see the same evaluations without running the field's
        // checks (and its availability look-ups) twice: multicast, connected once both listen.
        let shared = evaluations.multicast(subject: PassthroughSubject<FieldEvaluation<Value>, Never>())
        shared
            .map(\.states)
            .removeDuplicates()
            .sink { [weak self] states in
                guard let self else { return }
                var updated = requirementStates
                for (id, state) in zip(ids, states) { updated[id] = state }
                if updated != requirementStates { requirementStates = updated }
            }
            .store(in: &subscriptions)

        let isShown = Publishers.CombineLatest($touchedFields, $submitAttempted)
            .map { touched, submitted in submitted || touched.contains(field) }
            .removeDuplicates()
        Publishers.CombineLatest(shared, isShown)
            .map { evaluation, isShown in
                let messages = rules.rules.map { $0.message(evaluation.value) } + extraMessages
                return FieldValidation.decide(
                    outcomes: Array(zip(evaluation.states, messages)),
                    emptyMessage: rules.emptyMessage,
                    isEmpty: rules.isEmpty(evaluation.value),
                    isShown: isShown)
            }
            .removeDuplicates()
            .sink { [weak self] validation in self?.fieldValidations[field] = validation }
            .store(in: &subscriptions)
        shared.connect().store(in: &subscriptions)
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
