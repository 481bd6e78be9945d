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
        /// Made here, where the initializer is specialized with the caller's types (see
        /// `CombineLatest`): the subscription's per-value work then runs as concrete code.
        @usableFromInline let start: CombineLatestStart<Output, Failure>
        @usableFromInline typealias Latest = LatestValuesMany<Upstream.Output>

        @inlinable public init(_ upstreams: [Upstream]) {
            self.upstreams = upstreams
            let count = upstreams.count
            start = { downstream in
                let inner = CombineLatestSubscription<Latest, Output, Failure>(
                    downstream: downstream, latest: Latest(count: count), upstreamCount: count) { latest in
                    guard count > 0, latest.filled == count else { return nil }
                    return latest.values.map { $0! }
                }
                downstream.receive(subscription: inner)
                for (index, upstream) in upstreams.enumerated() {
                    upstream.subscribe(inner.slot(index) { latest, value in
                        if latest.values[index] == nil { latest.filled += 1 }
                        latest.values[index] = value
                    })
                }
            }
        }

        @inlinable public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            start(ClosureSubscriber(subscriber))
        }
    }
}

/// The latest value of each upstream (nil until it has produced one), and how many have one,
/// so the check per value is O(1). A struct rather than a tuple: see `LatestValues2`.
@usableFromInline struct LatestValuesMany<Value> {
    @usableFromInline var values: [Value?]
    @usableFromInline var filled = 0

    @inlinable init(count: Int) {
        values = Array(repeating: nil, count: count)
    }
}
