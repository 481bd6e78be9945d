import CombineSchedulers
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

extension Publisher where Failure == Never, Output: Equatable {
    /// Evaluates every value against a field's synchronous rules, plus an optional
    /// asynchronous rule, emitting one `FieldEvaluation` per distinct result.
    ///
    /// Each value produces exactly one evaluation, never a half-updated one. See
    /// `latestAnswers(for:debounce:scheduler:)` for how the asynchronous rule is checked.
    public func validate<S: Scheduler>(
        with rules: FieldRules<Output>,
        asyncRule: AsyncRule<Output>? = nil,
        debounce: S.SchedulerTimeType.Stride,
        scheduler: S
    ) -> AnyPublisher<FieldEvaluation<Output>, Never> {
        // `self` is subscribed twice (values and answers), not `share()`d: a shared publisher
        // would hand its current value to the first subscriber only.
        let answers = asyncRule.map { latestAnswers(for: $0, debounce: debounce, scheduler: scheduler) }
            ?? Just(nil).eraseToAnyPublisher()
        return combineLatest(answers)
            .map { value, answer in rules.evaluate(value, asyncRule: asyncRule, answer: answer) }
            .removeDuplicates()
            .eraseToAnyPublisher()
    }

    /// The answers of an asynchronous rule, each tagged with the value it answers; `nil`
    /// until the first one.
    ///
    /// Checks start only after the value has been still for `debounce`, a repeated value is
    /// not checked again, ineligible values are never checked, and a newer value cancels the
    /// check of an older one (`switchToLatest`), so a slow stale answer can never arrive
    /// after the current one. Nothing is emitted synchronously when a value changes.
    public func latestAnswers<S: Scheduler>(
        for rule: AsyncRule<Output>,
        debounce: S.SchedulerTimeType.Stride,
        scheduler: S
    ) -> AnyPublisher<AsyncAnswer<Output>?, Never> {
        self.debounce(for: debounce, scheduler: scheduler)
            .removeDuplicates()
            .map { value -> AnyPublisher<AsyncAnswer<Output>?, Never> in
                guard rule.isEligible(value) else { return Just(nil).eraseToAnyPublisher() }
                return rule.check(value)
                    .receive(on: scheduler)
                    .map { AsyncAnswer(value: value, state: $0) }
                    .eraseToAnyPublisher()
            }
            .switchToLatest()
            .prepend(nil)
            .eraseToAnyPublisher()
    }
}

/// An asynchronous rule's answer, remembered with the value it answers.
public struct AsyncAnswer<Value: Equatable>: Equatable {
    public let value: Value
    public let state: RequirementState

    public init(value: Value, state: RequirementState) {
        self.value = value
        self.state = state
    }
}
