import ReactiveValidation

/// The sign-up form's requirement states and field verdicts for one set of inputs.
struct FormEvaluation: Equatable {
    let requirementStates: [String: RequirementState]
    let fieldValidations: [SignupField: FieldValidation]

    init(
        policy: SignupPolicy,
        username: FieldEvaluation<String>,
        email: FieldEvaluation<String>,
        password: FieldEvaluation<String>,
        confirm: FieldEvaluation<PasswordConfirmation>,
        shownFields: Set<SignupField>
    ) {
        var states: [String: RequirementState] = [:]
        let evaluations: [(SignupField, [RequirementState])] = [
            (.username, username.states), (.email, email.states),
            (.password, password.states), (.confirm, confirm.states),
        ]
        for (field, fieldStates) in evaluations {
            for (requirement, state) in zip(policy.requirements(for: field), fieldStates) {
                states[requirement.id] = state
            }
        }
        requirementStates = states
        fieldValidations = [
            .username: policy.username.validation(
                of: username, extraMessages: [policy.usernameTakenMessage], isShown: shownFields.contains(.username)),
            .email: policy.email.validation(of: email, isShown: shownFields.contains(.email)),
            .password: policy.password.validation(of: password, isShown: shownFields.contains(.password)),
            .confirm: policy.confirm.validation(of: confirm, isShown: shownFields.contains(.confirm)),
        ]
    }
}
