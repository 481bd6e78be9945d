// OpenCombine 0.14 declares `CombineLatest` in its interface list but does not implement it.
// This file supplies the operator with Combine's spelling and semantics so view models read
// exactly as they would on Apple platforms, where Combine's own operator is used instead.
#if !canImport(Combine)
import Foundation
import OpenCombineShim

extension Publishers {
    /// Emits a pair of the latest values of both upstreams once each has produced one, and
    /// again whenever either produces another. Finishes when both finish; fails when either does.
    public struct CombineLatest<A: Publisher, B: Publisher>: Publisher where A.Failure == B.Failure {
        public typealias Output = (A.Output, B.Output)
        public typealias Failure = A.Failure

        public let a: A
        public let b: B

        public init(_ a: A, _ b: B) {
            self.a = a
            self.b = b
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = CombineLatestSubscription<A.Output, B.Output, Failure>(downstream: AnySubscriber(subscriber))
            subscriber.receive(subscription: inner)
            a.subscribe(inner.subscriberA)
            b.subscribe(inner.subscriberB)
        }
    }

    /// `CombineLatest` over three upstreams.
    public struct CombineLatest3<A: Publisher, B: Publisher, C: Publisher>: Publisher
    where A.Failure == B.Failure, B.Failure == C.Failure {
        public typealias Output = (A.Output, B.Output, C.Output)
        public typealias Failure = A.Failure

        public let a: A
        public let b: B
        public let c: C

        public init(_ a: A, _ b: B, _ c: C) {
            self.a = a
            self.b = b
            self.c = c
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            CombineLatest(CombineLatest(a, b), c)
                .map { pair, c in (pair.0, pair.1, c) }
                .receive(subscriber: subscriber)
        }
    }

    /// `CombineLatest` over four upstreams.
    public struct CombineLatest4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
    where A.Failure == B.Failure, B.Failure == C.Failure, C.Failure == D.Failure {
        public typealias Output = (A.Output, B.Output, C.Output, D.Output)
        public typealias Failure = A.Failure

        public let a: A
        public let b: B
        public let c: C
        public let d: D

        public init(_ a: A, _ b: B, _ c: C, _ d: D) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            CombineLatest(CombineLatest(a, b), CombineLatest(c, d))
                .map { ab, cd in (ab.0, ab.1, cd.0, cd.1) }
                .receive(subscriber: subscriber)
        }
    }
}

extension Publisher {
    public func combineLatest<P: Publisher>(_ other: P) -> Publishers.CombineLatest<Self, P>
    where Failure == P.Failure {
        Publishers.CombineLatest(self, other)
    }

    public func combineLatest<P: Publisher, T>(
        _ other: P, _ transform: @escaping (Output, P.Output) -> T
    ) -> Publishers.Map<Publishers.CombineLatest<Self, P>, T> where Failure == P.Failure {
        Publishers.CombineLatest(self, other).map(transform)
    }

    public func combineLatest<P: Publisher, Q: Publisher>(
        _ p: P, _ q: Q
    ) -> Publishers.CombineLatest3<Self, P, Q> where Failure == P.Failure, P.Failure == Q.Failure {
        Publishers.CombineLatest3(self, p, q)
    }
}

/// The shared state of one `CombineLatest` subscription.
///
/// Values are delivered while holding a recursive lock: downstream sees values one at a time
/// even when the upstreams emit on different threads, and a downstream that synchronously
/// causes an upstream to emit again (a common pattern with `@Published`) re-enters safely.
private final class CombineLatestSubscription<AOutput, BOutput, Failure: Error>: Subscription, @unchecked Sendable {
    private let lock = NSRecursiveLock()
    private var downstream: AnySubscriber<(AOutput, BOutput), Failure>?
    private var latestA: AOutput?
    private var latestB: BOutput?
    private var upstreamA: Subscription?
    private var upstreamB: Subscription?
    private var finishedA = false
    private var finishedB = false
    private var demand = Subscribers.Demand.none
    /// A combination arrived while downstream had no demand; send it when demand comes.
    private var hasUndelivered = false

    let combineIdentifier = CombineIdentifier()

    init(downstream: AnySubscriber<(AOutput, BOutput), Failure>) {
        self.downstream = downstream
    }

    var subscriberA: AnySubscriber<AOutput, Failure> {
        AnySubscriber(
            receiveSubscription: { [self] in attach($0, isA: true) },
            receiveValue: { [self] in receive(a: $0) },
            receiveCompletion: { [self] in complete($0, isA: true) })
    }

    var subscriberB: AnySubscriber<BOutput, Failure> {
        AnySubscriber(
            receiveSubscription: { [self] in attach($0, isA: false) },
            receiveValue: { [self] in receive(b: $0) },
            receiveCompletion: { [self] in complete($0, isA: false) })
    }

    func request(_ demand: Subscribers.Demand) {
        lock.lock()
        defer { lock.unlock() }
        self.demand += demand
        if hasUndelivered { deliverLatest() }
    }

    func cancel() {
        lock.lock()
        let subscriptions = [upstreamA, upstreamB]
        downstream = nil
        upstreamA = nil
        upstreamB = nil
        lock.unlock()
        subscriptions.forEach { $0?.cancel() }
    }

    private func attach(_ subscription: Subscription, isA: Bool) {
        lock.lock()
        guard downstream != nil else {
            lock.unlock()
            subscription.cancel()
            return
        }
        if isA { upstreamA = subscription } else { upstreamB = subscription }
        lock.unlock()
        // Only the latest value of each side matters, so take everything and keep one.
        subscription.request(.unlimited)
    }

    private func receive(a: AOutput) -> Subscribers.Demand {
        lock.lock()
        defer { lock.unlock() }
        latestA = a
        deliverLatest()
        return .none
    }

    private func receive(b: BOutput) -> Subscribers.Demand {
        lock.lock()
        defer { lock.unlock() }
        latestB = b
        deliverLatest()
        return .none
    }

    /// Call with the lock held.
    private func deliverLatest() {
        guard let downstream, let a = latestA, let b = latestB else { return }
        guard demand > 0 else {
            hasUndelivered = true
            return
        }
        hasUndelivered = false
        demand -= 1
        demand += downstream.receive((a, b))
    }

    private func complete(_ completion: Subscribers.Completion<Failure>, isA: Bool) {
        lock.lock()
        guard let downstream else {
            lock.unlock()
            return
        }
        switch completion {
        case .failure:
            let other = isA ? upstreamB : upstreamA
            self.downstream = nil
            upstreamA = nil
            upstreamB = nil
            lock.unlock()
            other?.cancel()
            downstream.receive(completion: completion)
        case .finished:
            if isA { finishedA = true } else { finishedB = true }
            guard finishedA && finishedB else {
                lock.unlock()
                return
            }
            self.downstream = nil
            lock.unlock()
            downstream.receive(completion: .finished)
        }
    }
}
#endif
