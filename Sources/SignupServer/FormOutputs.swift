import ReactiveValidation
import SignupDomain

/// Everything the page shows for a form at one moment: what a snapshot carries and what
/// change events are computed from.
struct FormOutputs: Equatable {
    var requirements: [String: RequirementState]
    var messages: [SignupField: String]
    var strength: PasswordStrength
    var isSubmitEnabled: Bool

    init(
        requirements: [String: RequirementState],
        validations: [SignupField: FieldValidation],
        strength: PasswordStrength,
        isSubmitEnabled: Bool
    ) {
        self.requirements = requirements
        self.messages = validations.mapValues(\.message)
        self.strength = strength
        self.isSubmitEnabled = isSubmitEnabled
    }

    /// What changed from `previous` to `self`, as protocol events, in a stable order:
    /// requirements (in policy order), messages (in field order), strength, submit.
    func changes(since previous: FormOutputs, requirementOrder: [String]) -> [FormEvent] {
        var events: [FormEvent] = []
        for id in requirementOrder {
            if let state = requirements[id], state != previous.requirements[id] {
                events.append(.requirement(id: id, state: state))
            }
        }
        for field in SignupField.allCases {
            let text = messages[field] ?? ""
            if text != previous.messages[field] ?? "" {
                events.append(.message(field: field, text: text))
            }
        }
        if strength != previous.strength { events.append(.strength(strength)) }
        if isSubmitEnabled != previous.isSubmitEnabled { events.append(.submit(enabled: isSubmitEnabled)) }
        return events
    }
}

/// One protocol event before it is encoded.
enum FormEvent: Equatable {
    case snapshot(FormOutputs)
    case requirement(id: String, state: RequirementState)
    case message(field: SignupField, text: String)
    case strength(PasswordStrength)
    case submit(enabled: Bool)

    /// The SSE `event:` name; part of the public protocol.
    var name: String {
        switch self {
        case .snapshot: return "snapshot"
        case .requirement: return "requirement"
        case .message: return "message"
        case .strength: return "strength"
        case .submit: return "submit"
        }
    }
}
