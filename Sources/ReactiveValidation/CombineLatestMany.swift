import Foundation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

extension Publishers {
    /// `CombineLatest` over any number of upstreams of one output type: an array of the latest
    /// value of each, in upstream order, once every upstream has produced one, and again
    /// whenever any produces another. Finishes when all finish; fails when any does.
    ///
    /// What a form whose fields are data needs: one input publisher per declared field,
    /// however many the policy declares, combined into one value per change (`CombineLatest4`
    /// stops at four). With no upstreams it never emits.
    public struct CombineLatestMany<Upstream: Publisher>: Publisher {
        public typealias Output = [Upstream.Output]
        public typealias Failure = Upstream.Failure

        public let upstreams: [Upstream]

        public init(_ upstreams: [Upstream]) {
            self.upstreams = upstreams
        }

        @inlinable public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let count = upstreams.count
            // `filled` counts the slots that have a value, so the check per value is O(1).
            let inner = CombineLatestSubscription<(values: [Upstream.Output?], filled: Int), Output, Failure>(
                downstream: AnySubscriber(subscriber),
                latest: (Array(repeating: nil, count: count), 0),
                upstreamCount: count
            ) { latest in
                guard count > 0, latest.filled == count else { return nil }
                return latest.values.map { $0! }
            }
            subscriber.receive(subscription: inner)
            for (index, upstream) in upstreams.enumerated() {
                upstream.subscribe(inner.slot(index) { latest, value in
                    if latest.values[index] == nil { latest.filled += 1 }
                    latest.values[index] = value
                })
            }
        }
    }
}
