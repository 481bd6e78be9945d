import ReactiveValidation
import XCTest
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

#if !canImport(Combine)
/// `.map { … }.removeDuplicates()` fused into one operator (the view model's last step):
/// OpenCombine's unfused pair is the reference, value for value and demand for demand.
final class MapRemovingDuplicatesTests: XCTestCase {
    private struct Boom: Error, Equatable {}

    /// The view model's spelling resolves to the fused operator (this would not compile if
    /// OpenCombine's `removeDuplicates` were chosen).
    func testTheViewModelsSpellingIsTheFusedOperator() {
        let subject = PassthroughSubject<Int, Never>()
        let fused: Publishers.MapRemovingDuplicates<PassthroughSubject<Int, Never>, Int> = subject.map { $0 / 2 }.removeDuplicates()
        _ = fused
    }

    func testPublishesWhatMapThenRemoveDuplicatesPublishesOverARandomWalk() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let subject = PassthroughSubject<Int, Never>()
            let transform: (Int) -> String = { String($0 / 3) }
            var fused: [String] = [], reference: [String] = []
            let a = subject.map(transform).removeDuplicates().sink { fused.append($0) }
            let b = Publishers.RemoveDuplicates(upstream: subject.map(transform), predicate: ==).sink { reference.append($0) }
            for _ in 0..<Int.random(in: 0...40, using: &generator) {
                subject.send(Int.random(in: 0...9, using: &generator))
            }
            XCTAssertEqual(fused, reference)
            XCTAssertFalse(zip(fused, fused.dropFirst()).contains { $0 == $1 }, "no value twice in a row")
            _ = (a, b)
        }
    }

    /// A repeat is not delivered, so it must not use up downstream's demand: it asks upstream
    /// for one more. Without that, the 2 below would be dropped for lack of demand.
    func testADroppedRepeatAsksUpstreamForOneMore() {
        for fusedOperator in [true, false] {
            let subject = PassthroughSubject<Int, Never>()
            let subscriber = ManualSubscriber<Int, Never>(initialDemand: .max(2))
            if fusedOperator {
                subject.map { $0 * 10 }.removeDuplicates().subscribe(subscriber)
            } else {
                Publishers.RemoveDuplicates(upstream: subject.map { $0 * 10 }, predicate: ==).subscribe(subscriber)
            }
            for value in [1, 1, 1, 2, 3] { subject.send(value) }
            XCTAssertEqual(subscriber.values, [10, 20], fusedOperator ? "fused" : "OpenCombine's pair")
            subscriber.subscription?.request(.max(1))
            subject.send(3)
            XCTAssertEqual(subscriber.values, [10, 20, 30], fusedOperator ? "fused" : "OpenCombine's pair")
        }
    }

    func testCompletionAndFailurePassThroughAndCancelStopsValues() {
        let finishing = PassthroughSubject<Int, Boom>()
        let finished = ManualSubscriber<Int, Boom>(initialDemand: .unlimited)
        finishing.map { $0 }.removeDuplicates().subscribe(finished)
        finishing.send(1)
        finishing.send(completion: .finished)
        XCTAssertEqual(finished.values, [1])
        XCTAssertEqual(finished.completions, [.finished])

        let failing = PassthroughSubject<Int, Boom>()
        let failed = ManualSubscriber<Int, Boom>(initialDemand: .unlimited)
        failing.map { $0 }.removeDuplicates().subscribe(failed)
        failing.send(completion: .failure(Boom()))
        XCTAssertEqual(failed.completions, [.failure(Boom())])

        let subject = PassthroughSubject<Int, Never>()
        let cancelled = ManualSubscriber<Int, Never>(initialDemand: .unlimited)
        subject.map { $0 }.removeDuplicates().subscribe(cancelled)
        subject.send(1)
        cancelled.subscription?.cancel()
        subject.send(2)
        XCTAssertEqual(cancelled.values, [1], "nothing after cancel")
    }

    /// Two subscriptions to one publisher each start without a last value.
    func testEachSubscriptionRemembersItsOwnLastValue() {
        let subject = PassthroughSubject<Int, Never>()
        let publisher = subject.map { $0 }.removeDuplicates()
        var first: [Int] = [], second: [Int] = []
        let a = publisher.sink { first.append($0) }
        subject.send(5)
        let b = publisher.sink { second.append($0) }
        subject.send(5)
        subject.send(6)
        XCTAssertEqual(first, [5, 6])
        XCTAssertEqual(second, [5, 6], "the second subscription's first value is not a repeat of the first's")
        _ = (a, b)
    }
}
#endif
