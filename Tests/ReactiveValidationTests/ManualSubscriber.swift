#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// A subscriber that asks for exactly the demand a test gives it, and records everything:
/// what the operator tests need to check demand, completion and cancellation.
final class ManualSubscriber<Input, Failure: Error>: Subscriber {
    let combineIdentifier = CombineIdentifier()
    private let initialDemand: Subscribers.Demand
    private(set) var subscription: (any Subscription)?
    private(set) var values: [Input] = []
    private(set) var completions: [Subscribers.Completion<Failure>] = []

    init(initialDemand: Subscribers.Demand) {
        self.initialDemand = initialDemand
    }

    func receive(subscription: any Subscription) {
        self.subscription = subscription
        if initialDemand > 0 { subscription.request(initialDemand) }
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        values.append(input)
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        completions.append(completion)
    }
}
