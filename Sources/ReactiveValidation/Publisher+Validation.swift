import CombineSchedulers
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

extension Publisher where Failure == Never {
    /// The state of `rule` for every value, repeating nothing unchanged.
    public func requirementState(_ rule: Rule<Output>) -> AnyPublisher<RequirementState, Never> {
        map(rule.state(for:))
            .removeDuplicates()
            .eraseToAnyPublisher()
    }

    /// The state of an asynchronous rule for the latest value.
    ///
    /// Ineligible values are `unmet` at once and never checked. Eligible ones are `pending`
    /// from the moment they appear until the answer *for that same value* arrives. Checks
    /// start only after the value has been still for `debounce`, repeated values are not
    /// checked again, and a newer value cancels the check of an older one
    /// (`switchToLatest`), so a slow stale answer can never overwrite the current one.
    public func asyncRequirementState<S: Scheduler>(
        _ rule: AsyncRule<Output>,
        debounce: S.SchedulerTimeType.Stride,
        scheduler: S
    ) -> AnyPublisher<RequirementState, Never> where Output: Equatable {
        // Subscribes to `self` twice (values and answers). Not `share()`d on purpose: a shared
        // publisher would give its current value only to the first subscriber.
        let answers = self
            .debounce(for: debounce, scheduler: scheduler)
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

        return combineLatest(answers)
            .map { value, answer -> RequirementState in
                guard rule.isEligible(value) else { return .unmet }
                guard let answer, answer.value == value else { return .pending }
                return answer.state
            }
            .removeDuplicates()
            .eraseToAnyPublisher()
    }
}

/// An asynchronous answer remembered with the value it answers.
private struct Answer<Value> {
    let value: Value
    let state: RequirementState
}
