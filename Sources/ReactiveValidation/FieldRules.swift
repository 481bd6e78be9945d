/// A field's synchronous rules in priority order, plus what to say while it is empty.
public struct FieldRules<Value>: Sendable {
    public let rules: [Rule<Value>]
    /// Said instead of any rule's message while the field is empty, e.g. "Enter a username".
    public let emptyMessage: String?
    public let isEmpty: @Sendable (Value) -> Bool

    public init(rules: [Rule<Value>], emptyMessage: String?, isEmpty: @escaping @Sendable (Value) -> Bool) {
        self.rules = rules
        self.emptyMessage = emptyMessage
        self.isEmpty = isEmpty
    }

    public var requirements: [Requirement] { rules.map(\.requirement) }

    /// Whether every rule is met, without going through a publisher (e.g. a server-side check).
    public func allMet(by value: Value) -> Bool {
        rules.allSatisfy { $0.isMet(value) }
    }
}

extension FieldRules where Value: Equatable {
    /// Every requirement's state for `value`, in rule order with the asynchronous rule last:
    /// `unmet` when the value is not eligible for checking, its answer when the latest answer
    /// is for this very value, otherwise `pending`.
    public func evaluate(
        _ value: Value, asyncRule: AsyncRule<Value>? = nil, answer: AsyncAnswer<Value>? = nil
    ) -> FieldEvaluation<Value> {
        var states = rules.map { $0.state(for: value) }
        if let asyncRule {
            if !asyncRule.isEligible(value) {
                states.append(.unmet)
            } else if let answer, answer.value == value {
                states.append(answer.state)
            } else {
                states.append(.pending)
            }
        }
        return FieldEvaluation(value: value, states: states)
    }

    /// The field's verdict for an evaluation, given whether problems may be shown yet.
    /// `extraMessages` are the asynchronous rule's messages, after the rules' own.
    public func validation(of evaluation: FieldEvaluation<Value>, extraMessages: [String] = [], isShown: Bool) -> FieldValidation {
        let messages = rules.map { $0.message(evaluation.value) } + extraMessages
        return FieldValidation.decide(
            outcomes: Array(zip(evaluation.states, messages)),
            emptyMessage: emptyMessage,
            isEmpty: isEmpty(evaluation.value),
            isShown: isShown)
    }
}

extension FieldRules where Value == String {
    public init(rules: [Rule<String>], emptyMessage: String?) {
        self.init(rules: rules, emptyMessage: emptyMessage, isEmpty: { $0.isEmpty })
    }
}
