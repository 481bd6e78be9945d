/// The verdict on one field, in the order a person should hear it.
///
/// `idle` until the person has left the field (or tried to submit), so nobody is scolded
/// while still typing; then the first problem in priority order, or valid.
public enum FieldValidation: Sendable, Hashable {
    case idle
    case pending
    case invalid(reason: String)
    case valid

    /// The message to show for this verdict ("" when there is nothing to say).
    public var message: String {
        if case .invalid(let reason) = self { return reason }
        return ""
    }

    /// Decides a field from its requirement outcomes, given in priority order.
    ///
    /// - Parameters:
    ///   - outcomes: each requirement's state with the message it would show.
    ///   - emptyMessage: said instead of any rule message while the field is empty.
    ///   - isEmpty: whether the field is empty.
    ///   - isShown: whether the person may see problems yet (left the field or submitted).
    public static func decide(
        outcomes: [(state: RequirementState, message: String)],
        emptyMessage: String?,
        isEmpty: Bool,
        isShown: Bool
    ) -> FieldValidation {
        decide(states: outcomes.map(\.state), message: { outcomes[$0].message },
               emptyMessage: emptyMessage, isEmpty: isEmpty, isShown: isShown)
    }

    /// The same, asking for the message of the first unmet requirement (by its index) only
    /// when it is needed.
    @inlinable public static func decide(
        states: [RequirementState],
        message: (Int) -> String,
        emptyMessage: String?,
        isEmpty: Bool,
        isShown: Bool
    ) -> FieldValidation {
        guard isShown else { return .idle }
        if isEmpty, let emptyMessage { return .invalid(reason: emptyMessage) }
        for (index, state) in states.enumerated() {
            switch state {
            case .unmet: return .invalid(reason: message(index))
            case .pending: return .pending
            case .met: continue
            }
        }
        return .valid
    }
}
