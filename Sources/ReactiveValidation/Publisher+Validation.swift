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
    /// The asynchronous rule's state is `unmet` for ineligible values (never checked), and
    /// for eligible ones `pending` from the moment they appear until the answer *for that
    /// same value* arrives. Checks start only after the value has been still for `debounce`,
    /// a repeated value is not checked again, and a newer value cancels the check of an
    /// older one (`switchToLatest`), so a slow stale answer can never overwrite the current
    /// one. Each value produces exactly one evaluation, never a half-updated one.
    public func validate<S: Scheduler>(
        with rules: FieldRules<Output>,
        asyncRule: AsyncRule<Output>? = nil,
        debounce: S.SchedulerTimeType.Stride,
        scheduler: S
    ) -> AnyPublisher<FieldEvaluation<Output>, Never> {
        // `self` is subscribed twice (values and answers), not `share()`d: a shared publisher
        // would hand its current value to the first subscriber only.
        let answers: AnyPublisher<Answer<Output>?, Never>
        if let asyncRule {
            answers = debounceAnswers(asyncRule, debounce: debounce, scheduler: scheduler)
        } else {
            answers = Just(nil).eraseToAnyPublisher()
        }
        return combineLatest(answers)
            .map { value, answer in
                var states = rules.rules.map { $0.state(for: value) }
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
            .removeDuplicates()
            .eraseToAnyPublisher()
    }

    private func debounceAnswers<S: Scheduler>(
        _ rule: AsyncRule<Output>,
        debounce: S.SchedulerTimeType.Stride,
        scheduler: S
    ) -> AnyPublisher<Answer<Output>?, Never> {
        self.debounce(for: debounce, scheduler: scheduler)
            .removeDuplicates()
            .map { value -> AnyPublisher<Answer<Output>?, Never> in
                guard rule.isEligible(value) else { return Just(nil).eraseToAnyPublisher() }
                return rule.check(value)
                    .receive(on: scheduler)
                    .map { Answer(value: value, state: $0) }
                    .eraseToAnyPublisher()
            }
            .switchToLatest()
            .prepend(nil)
            .eraseToAnyPublisher()
    }
}

/// An asynchronous answer remembered with the value it answers.
struct Answer<Value> {
    let value: Value
    let state: RequirementState
}
