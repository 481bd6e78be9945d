// OpenCombine 0.14 declares `CombineLatest` in its interface list but does not implement it.
// This file supplies the operator with Combine's spelling and semantics so view models read
// exactly as they would on Apple platforms, where Combine's own operator is used instead.
import Foundation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

#if !canImport(Combine)
// Each operator's subscription is started by a closure made in its `@inlinable` initializer
// (`start`): the initializer is specialized where a view model calls it, with the concrete
// types, so the closure is too, and with it the subscription's per-value work (storing an
// upstream's value, building the output, delivering it). Made in `receive(subscriber:)`, which
// OpenCombine's `subscribe` calls through the protocol, that work ran as unspecialized generic
// code that looked up `Optional<T>`'s and the tuples' metadata on every keystroke (about a
// tenth of an edit's instructions, issue 24), and copied the output tuple through its value
// witnesses. The latest values are kept in a struct rather than a tuple for the same reason:
// a tuple crossing from concrete into generic code goes through a thunk that takes it apart
// element by element, with a metadata look-up for each element's `Optional`.
extension Publishers {
    /// Emits a pair of the latest values of both upstreams once each has produced one, and
    /// again whenever either produces another. Finishes when both finish; fails when either does.
    public struct CombineLatest<A: Publisher, B: Publisher>: Publisher where A.Failure == B.Failure {
        public typealias Output = (A.Output, B.Output)
        public typealias Failure = A.Failure
        @usableFromInline typealias Latest = LatestValues2<A.Output, B.Output>

        public let a: A
        public let b: B
        @usableFromInline let start: CombineLatestStart<Output, Failure>

        @inlinable public init(_ a: A, _ b: B) {
            self.a = a
            self.b = b
            start = { downstream in
                let inner = CombineLatestSubscription<Latest, Output, Failure>(
                    downstream: downstream, latest: Latest(), upstreamCount: 2) { latest in
                    guard let a = latest.a, let b = latest.b else { return nil }
                    return (a, b)
                }
                downstream.receive(subscription: inner)
                a.subscribe(inner.slot(0) { $0.a = $1 })
                b.subscribe(inner.slot(1) { $0.b = $1 })
            }
        }

        @inlinable public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            start(ClosureSubscriber(subscriber))
        }
    }

    /// `CombineLatest` over three upstreams.
    public struct CombineLatest3<A: Publisher, B: Publisher, C: Publisher>: Publisher
    where A.Failure == B.Failure, B.Failure == C.Failure {
        public typealias Output = (A.Output, B.Output, C.Output)
        public typealias Failure = A.Failure
        @usableFromInline typealias Latest = LatestValues3<A.Output, B.Output, C.Output>

        public let a: A
        public let b: B
        public let c: C
        @usableFromInline let start: CombineLatestStart<Output, Failure>

        @inlinable public init(_ a: A, _ b: B, _ c: C) {
            self.a = a
            self.b = b
            self.c = c
            start = { downstream in
                let inner = CombineLatestSubscription<Latest, Output, Failure>(
                    downstream: downstream, latest: Latest(), upstreamCount: 3) { latest in
                    guard let a = latest.a, let b = latest.b, let c = latest.c else { return nil }
                    return (a, b, c)
                }
                downstream.receive(subscription: inner)
                a.subscribe(inner.slot(0) { $0.a = $1 })
                b.subscribe(inner.slot(1) { $0.b = $1 })
                c.subscribe(inner.slot(2) { $0.c = $1 })
            }
        }

        @inlinable public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            start(ClosureSubscriber(subscriber))
        }
    }

    /// `CombineLatest` over four upstreams.
    public struct CombineLatest4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
    where A.Failure == B.Failure, B.Failure == C.Failure, C.Failure == D.Failure {
        public typealias Output = (A.Output, B.Output, C.Output, D.Output)
        public typealias Failure = A.Failure
        @usableFromInline typealias Latest = LatestValues4<A.Output, B.Output, C.Output, D.Output>

        public let a: A
        public let b: B
        public let c: C
        public let d: D
        @usableFromInline let start: CombineLatestStart<Output, Failure>

        @inlinable public init(_ a: A, _ b: B, _ c: C, _ d: D) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
            start = { downstream in
                let inner = CombineLatestSubscription<Latest, Output, Failure>(
                    downstream: downstream, latest: Latest(), upstreamCount: 4) { latest in
                    guard let a = latest.a, let b = latest.b, let c = latest.c, let d = latest.d else { return nil }
                    return (a, b, c, d)
                }
                downstream.receive(subscription: inner)
                a.subscribe(inner.slot(0) { $0.a = $1 })
                b.subscribe(inner.slot(1) { $0.b = $1 })
                c.subscribe(inner.slot(2) { $0.c = $1 })
                d.subscribe(inner.slot(3) { $0.d = $1 })
            }
        }

        @inlinable public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            start(ClosureSubscriber(subscriber))
        }
    }
}

/// Starts one subscription of a combining operator for a subscriber: makes it, hands it to
/// the subscriber, then subscribes to the upstreams. Made in the operator's initializer, so
/// everything it builds runs as specialized code.
@usableFromInline typealias CombineLatestStart<Output, Failure: Error> = (ClosureSubscriber<Output, Failure>) -> Void

/// The latest value of each of two upstreams; nil until that upstream has produced one.
@usableFromInline struct LatestValues2<A, B> {
    @usableFromInline var a: A?
    @usableFromInline var b: B?
    @inlinable init() {}
}

/// The latest value of each of three upstreams; nil until that upstream has produced one.
@usableFromInline struct LatestValues3<A, B, C> {
    @usableFromInline var a: A?
    @usableFromInline var b: B?
    @usableFromInline var c: C?
    @inlinable init() {}
}

/// The latest value of each of four upstreams; nil until that upstream has produced one.
@usableFromInline struct LatestValues4<A, B, C, D> {
    @usableFromInline var a: A?
    @usableFromInline var b: B?
    @usableFromInline var c: C?
    @usableFromInline var d: D?
    @inlinable init() {}
}

extension Publisher {
    @inlinable public func combineLatest<P: Publisher>(_ other: P) -> Publishers.CombineLatest<Self, P>
    where Failure == P.Failure {
        Publishers.CombineLatest(self, other)
    }

    @inlinable public func combineLatest<P: Publisher, T>(
        _ other: P, _ transform: @escaping (Output, P.Output) -> T
    ) -> Publishers.Map<Publishers.CombineLatest<Self, P>, T> where Failure == P.Failure {
        Publishers.CombineLatest(self, other).map(transform)
    }

    @inlinable public func combineLatest<P: Publisher, Q: Publisher>(
        _ p: P, _ q: Q
    ) -> Publishers.CombineLatest3<Self, P, Q> where Failure == P.Failure, P.Failure == Q.Failure {
        Publishers.CombineLatest3(self, p, q)
    }
}

#endif

/// The shared state of one `CombineLatest` subscription over any number of upstreams.
///
/// One flat subscription per operator: `CombineLatest4` used to nest three pairwise
/// subscriptions and a `map`, and a view model's keystroke went through every layer (with a
/// lock and a type-erased call each). `Latest` holds the latest value of each upstream;
/// `combine` turns it into the output once every upstream has produced a value.
///
/// Values are delivered while holding a recursive lock: downstream sees values one at a time
/// even when the upstreams emit on different threads, and a downstream that synchronously
/// causes an upstream to emit again (a common pattern with `@Published`) re-enters safely.
@usableFromInline final class CombineLatestSubscription<Latest, Output, Failure: Error>: Subscription, @unchecked Sendable {
    @usableFromInline let lock = NSRecursiveLock()
    // Guarded by `lock`, which is their exclusivity: no runtime check per access (about 75
    // instructions each, several per keystroke; see DEVELOPMENT.md, "exclusivity").
    @exclusivity(unchecked) @usableFromInline var downstream: ClosureSubscriber<Output, Failure>?
    @exclusivity(unchecked) @usableFromInline var latest: Latest
    @usableFromInline let combine: (inout Latest) -> Output?
    @exclusivity(unchecked) @usableFromInline var upstreams: [Subscription?]
    @exclusivity(unchecked) @usableFromInline var finished: [Bool]
    @exclusivity(unchecked) @usableFromInline var demand = Subscribers.Demand.none
    /// A combination arrived while downstream had no demand; send it when demand comes.
    @exclusivity(unchecked) @usableFromInline var hasUndelivered = false

    @usableFromInline let combineIdentifier = CombineIdentifier()

    @inlinable init(downstream: ClosureSubscriber<Output, Failure>, latest: Latest, upstreamCount: Int,
         combine: @escaping (inout Latest) -> Output?) {
        self.downstream = downstream
        self.latest = latest
        self.combine = combine
        self.upstreams = Array(repeating: nil, count: upstreamCount)
        self.finished = Array(repeating: false, count: upstreamCount)
    }

    /// The subscriber for upstream number `index`; `store` puts its value into `latest`.
    @inlinable func slot<Input>(_ index: Int, store: @escaping (inout Latest, Input) -> Void) -> ClosureSubscriber<Input, Failure> {
        ClosureSubscriber(
            attach: { [self] in attach($0, at: index) },
            receive: { [self] value in
                lock.lock()
                defer { lock.unlock() }
                store(&latest, value)
                deliverLatest()
                // Only the latest value of each side matters: `attach` asked for everything.
                return .none
            },
            complete: { [self] in complete($0, at: index) })
    }

    @inlinable func request(_ demand: Subscribers.Demand) {
        lock.lock()
        defer { lock.unlock() }
        self.demand += demand
        if hasUndelivered { deliverLatest() }
    }

    @inlinable func cancel() {
        lock.lock()
        let subscriptions = upstreams
        downstream = nil
        upstreams = upstreams.map { _ in nil }
        lock.unlock()
        subscriptions.forEach { $0?.cancel() }
    }

    @inlinable func attach(_ subscription: Subscription, at index: Int) {
        lock.lock()
        guard downstream != nil else {
            lock.unlock()
            subscription.cancel()
            return
        }
        upstreams[index] = subscription
        lock.unlock()
        // Only the latest value of each side matters, so take everything and keep one.
        subscription.request(.unlimited)
    }

    /// Call with the lock held.
    @inlinable func deliverLatest() {
        // `inout` only to read the latest values in place: passed by value, the class's stored
        // latest values were copied (and destroyed) on every delivery.
        guard let downstream, let output = combine(&latest) else { return }
        guard demand > 0 else {
            hasUndelivered = true
            return
        }
        hasUndelivered = false
        demand -= 1
        demand += downstream.receive(output)
    }

    @inlinable func complete(_ completion: Subscribers.Completion<Failure>, at index: Int) {
        lock.lock()
        guard let downstream else {
            lock.unlock()
            return
        }
        switch completion {
        case .failure:
            let others = upstreams.enumerated().filter { $0.offset != index }.compactMap(\.element)
            self.downstream = nil
            upstreams = upstreams.map { _ in nil }
            lock.unlock()
            others.forEach { $0.cancel() }
            downstream.receive(completion: completion)
        case .finished:
            finished[index] = true
            guard finished.allSatisfy({ $0 }) else {
                lock.unlock()
                return
            }
            self.downstream = nil
            lock.unlock()
            downstream.receive(completion: .finished)
        }
    }
}

/// A subscriber made of three closures. This module's operators use it on both sides: as
/// the subscriber they put upstream (`CombineLatest`'s slot per upstream,
/// `MapRemovingDuplicates`' step), whose closures were made where the types are concrete, and
/// wrapping the subscriber they send to, so delivery is one closure call. Not
/// `AnySubscriber`: its initializer asks the subscriber for descriptions and reflection
/// (dynamic casts, the type's name made into a string twice), about 15,000 instructions for
/// every operator of every view model built, that is every page view someone types in.
@usableFromInline final class ClosureSubscriber<Input, Failure: Error>: Subscriber {
    @usableFromInline let combineIdentifier = CombineIdentifier()
    @usableFromInline let attach: (Subscription) -> Void
    @usableFromInline let receiveValue: (Input) -> Subscribers.Demand
    @usableFromInline let complete: (Subscribers.Completion<Failure>) -> Void

    @inlinable init(attach: @escaping (Subscription) -> Void, receive: @escaping (Input) -> Subscribers.Demand,
                    complete: @escaping (Subscribers.Completion<Failure>) -> Void) {
        self.attach = attach
        self.receiveValue = receive
        self.complete = complete
    }

    /// `subscriber`'s three methods.
    @inlinable convenience init<S: Subscriber>(_ subscriber: S) where S.Input == Input, S.Failure == Failure {
        self.init(attach: { subscriber.receive(subscription: $0) }, receive: { subscriber.receive($0) },
                  complete: { subscriber.receive(completion: $0) })
    }

    @inlinable func receive(subscription: Subscription) { attach(subscription) }

    @inlinable func receive(_ input: Input) -> Subscribers.Demand { receiveValue(input) }

    @inlinable func receive(completion: Subscribers.Completion<Failure>) { complete(completion) }
}
