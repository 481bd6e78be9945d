import CombineSchedulers
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

extension Publisher where Failure == Never, Output: Equatable {
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
