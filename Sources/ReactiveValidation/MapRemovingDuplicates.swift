import Foundation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

#if !canImport(Combine)
// `.map { … }.removeDuplicates()` as one operator: the view model's last step, run on every
// keystroke. OpenCombine runs `removeDuplicates` as unspecialized generic code (its
// `FilterProducer`): each value looked up the metadata of `Optional<Output>`,
// `PartialCompletion` and the producer's state, seven look-ups and about 5,600 instructions an
// edit before the comparison itself, and `map` added a hop of its own (issue 24). Combine and
// OpenCombine fuse operators the same way (`map` after `map`, `Just.removeDuplicates`): an
// overload on the concrete publisher type is preferred to the protocol's, so the view model
// still reads `.map { … }.removeDuplicates()`.
extension Publishers.Map where Output: Equatable {
    /// `removeDuplicates()` after this `map`, fused: the same values, the same demand.
    @inlinable public func removeDuplicates() -> Publishers.MapRemovingDuplicates<Upstream, Output> {
        Publishers.MapRemovingDuplicates(upstream: upstream, transform: transform)
    }
}

extension Publishers {
    /// Transforms each value and publishes it unless it equals the last one published:
    /// `map(transform).removeDuplicates()` in one step. A value dropped as a repeat asks
    /// upstream for one more, as `removeDuplicates` does, so downstream's demand is kept.
    public struct MapRemovingDuplicates<Upstream: Publisher, Output: Equatable>: Publisher {
        public typealias Failure = Upstream.Failure

        public let upstream: Upstream
        /// One subscription's per-value step, made here, where the initializer is specialized
        /// with the caller's types (see `CombineLatest`): the transform, the comparison with
        /// the last value and the call downstream run as concrete code, and the subscriber in
        /// between only passes the upstream's value through.
        @usableFromInline let makeStep: (ClosureSubscriber<Output, Failure>) -> (Upstream.Output) -> Subscribers.Demand

        @inlinable public init(upstream: Upstream, transform: @escaping (Upstream.Output) -> Output) {
            self.upstream = upstream
            makeStep = { downstream in
                // Each subscription remembers its own last value.
                var last: Output?
                return { input in
                    let output = transform(input)
                    if let last, last == output { return .max(1) }
                    last = output
                    return downstream.receive(output)
                }
            }
        }

        @inlinable public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            // The upstream's subscription goes straight downstream (requests and cancellation
            // need no help here); values go through the step, completion straight on.
            let downstream = ClosureSubscriber(subscriber)
            upstream.subscribe(ClosureSubscriber<Upstream.Output, Failure>(
                attach: downstream.receive(subscription:), receive: makeStep(downstream),
                complete: downstream.receive(completion:)))
        }
    }
}
#endif
