#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// A field's synchronous rules in priority order, plus what to say while it is empty.
public struct FieldRules<Value>: Sendable {
    public let rules: [Rule<Value>]
    /// Conditions off the checklist; the first failed one speaks before any rule.
    public let checks: [Check<Value>]
    /// Said instead of any rule's message while the field is empty, e.g. "Enter a username".
    public let emptyMessage: String?
    public let isEmpty: @Sendable (Value) -> Bool

    public init(rules: [Rule<Value>], checks: [Check<Value>] = [], emptyMessage: String?,
                isEmpty: @escaping @Sendable (Value) -> Bool) {
        self.rules = rules
        self.checks = checks
        self.emptyMessage = emptyMessage
        self.isEmpty = isEmpty
    }

    @inlinable public var requirements: [Requirement] { rules.map(\.requirement) }

    /// Whether every rule is met and every check passed, without going through a publisher
    /// (e.g. a server-side check).
    @inlinable public func allMet(by value: Value) -> Bool {
        checks.allSatisfy { $0.isPassed(value) } && rules.allSatisfy { $0.isMet(value) }
    }

    /// An asynchronous rule asked only about values that pass every rule and check of this
    /// field (e.g. "not already taken" after the username's own rules). Evaluate it with
    /// these rules: their verdict is reused, not judged again.
    public func asyncRule(
        id: String, text: String, check: @escaping @Sendable (Value) -> AnyPublisher<RequirementState, Never>
    ) -> AsyncRule<Value> {
        let rules = self
        return AsyncRule(requirement: Requirement(id: id, text: text), isEligible: { rules.allMet(by: $0) },
                         check: check, isEligibleWhenFieldPasses: true)
    }

    /// The message of the first check `value` fails, if any.
    @inlinable public func failedCheckMessage(for value: Value) -> String? {
        checks.first { !$0.isPassed(value) }.map { $0.message(value) }
    }
}

extension FieldRules where Value: Equatable {
    /// Every requirement's state for `value`, in rule order with the asynchronous rule last:
    /// `unmet` when the value is not eligible for checking, its answer when the latest answer
    /// is for this very value, otherwise `pending`.
    @inlinable public func evaluate(
        _ value: Value, asyncRule: AsyncRule<Value>? = nil, answer: AsyncAnswer<Value>? = nil
    ) -> FieldEvaluation<Value> {
        var states = rules.map { $0.state(for: value) }
        let failedCheck = failedCheckMessage(for: value)
        if let asyncRule {
            states.append(asyncState(asyncRule, answer: answer, for: value,
                                     fieldPasses: { failedCheck == nil && states.allSatisfy { $0 == .met } }))
        }
        return FieldEvaluation(value: value, states: states, failedCheckMessage: failedCheck)
    }

    /// The same with several asynchronous rules, each with its latest answer (same order):
    /// their states follow the synchronous ones in that order. The one-rule form above is the
    /// typing path's; this one serves fields that have more (a new password: the breach
    /// check and "not your current password").
    @inlinable public func evaluate(
        _ value: Value, asyncRules: [AsyncRule<Value>], answers: [AsyncAnswer<Value>?]
    ) -> FieldEvaluation<Value> {
        precondition(asyncRules.count == answers.count, "one answer (or nil) per asynchronous rule")
        var states = rules.map { $0.state(for: value) }
        let failedCheck = failedCheckMessage(for: value)
        let fieldPasses = failedCheck == nil && states.allSatisfy { $0 == .met }
        for (asyncRule, answer) in zip(asyncRules, answers) {
            states.append(asyncState(asyncRule, answer: answer, for: value, fieldPasses: { fieldPasses }))
        }
        return FieldEvaluation(value: value, states: states, failedCheckMessage: failedCheck)
    }

    /// One asynchronous rule's state for `value`: `unmet` when the value is not eligible for
    /// checking (`fieldPasses` is asked only for rules that wait for the field's own), its
    /// answer when the latest answer is for this very value, otherwise `pending`.
    @inlinable func asyncState(_ asyncRule: AsyncRule<Value>, answer: AsyncAnswer<Value>?, for value: Value,
                               fieldPasses: () -> Bool) -> RequirementState {
        let isEligible = asyncRule.isEligibleWhenFieldPasses ? fieldPasses() : asyncRule.isEligible(value)
        guard isEligible else { return .unmet }
        if let answer, answer.value == value { return answer.state }
        return .pending
    }

    /// The field's verdict for an evaluation, given whether problems may be shown yet.
    /// `extraMessages` are the asynchronous rule's messages, after the rules' own.
    @inlinable public func validation(of evaluation: FieldEvaluation<Value>, extraMessages: [String] = [], isShown: Bool) -> FieldValidation {
        guard isShown else { return .idle }
        let value = evaluation.value
        if let failed = evaluation.failedCheckMessage, !isEmpty(value) {
            return .invalid(reason: failed)
        }
        // Only the message that is shown is built: some explain a password and cost more
        // than the check itself.
        return FieldValidation.decide(
            states: evaluation.states,
            message: { index in index < rules.count ? rules[index].message(value) : extraMessages[index - rules.count] },
            emptyMessage: emptyMessage,
            isEmpty: isEmpty(value),
            isShown: true)
    }
}

extension FieldRules where Value == String {
    public init(rules: [Rule<String>], checks: [Check<String>] = [], emptyMessage: String?) {
        self.init(rules: rules, checks: checks, emptyMessage: emptyMessage, isEmpty: { $0.isEmpty })
    }
}
