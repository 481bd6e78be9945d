import ReactiveValidation
import XCTest
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// `Publishers.CombineLatest` (and 3 / 4) as the view models rely on it: Combine's semantics.
final class CombineLatestTests: XCTestCase {
    private struct Boom: Error, Equatable {}

    /// Counts cancellations of one upstream.
    private final class CancelCounter {
        var count = 0
    }

    // MARK: Values

    func testEmitsNothingUntilBothSidesHaveAValueThenOnlyTheLatestPair() {
        let numbers = PassthroughSubject<Int, Never>()
        let letters = PassthroughSubject<String, Never>()
        var received: [String] = []
        let cancellable = Publishers.CombineLatest(numbers, letters)
            .sink { received.append("\($0)\($1)") }

        numbers.send(1)
        numbers.send(2)
        XCTAssertEqual(received, [], "one side alone must not produce a pair")

        letters.send("a")
        XCTAssertEqual(received, ["2a"], "the first pair uses the latest value of the side that was early")
        withExtendedLifetime(cancellable) {}
    }

    func testEmitsTheLatestPairOnEveryChangeFromEitherSide() {
        let numbers = PassthroughSubject<Int, Never>()
        let letters = PassthroughSubject<String, Never>()
        var received: [String] = []
        let cancellable = numbers.combineLatest(letters)
            .sink { received.append("\($0)\($1)") }

        numbers.send(1)
        letters.send("a")
        numbers.send(2)
        letters.send("b")
        letters.send("c")
        numbers.send(3)

        XCTAssertEqual(received, ["1a", "2a", "2b", "2c", "3c"])
        withExtendedLifetime(cancellable) {}
    }

    func testCombineLatestWithTransformAppliesItToEveryPair() {
        let numbers = PassthroughSubject<Int, Never>()
        let factors = PassthroughSubject<Int, Never>()
        var received: [Int] = []
        let cancellable = numbers.combineLatest(factors) { $0 * $1 }
            .sink { received.append($0) }

        numbers.send(2)
        factors.send(10)
        numbers.send(3)
        factors.send(100)

        XCTAssertEqual(received, [20, 30, 300])
        withExtendedLifetime(cancellable) {}
    }

    func testPublishedStyleUpstreamsEmitTheirCurrentValuesOnSubscription() {
        let first = CurrentValueSubject<Int, Never>(1)
        let second = CurrentValueSubject<String, Never>("a")
        var received: [String] = []
        let cancellable = Publishers.CombineLatest(first, second)
            .sink { received.append("\($0)\($1)") }

        XCTAssertEqual(received, ["1a"])
        second.value = "b"
        XCTAssertEqual(received, ["1a", "1b"])
        withExtendedLifetime(cancellable) {}
    }

    // MARK: Completion

    func testFinishesOnlyWhenBothSidesHaveFinished() {
        let numbers = PassthroughSubject<Int, Never>()
        let letters = PassthroughSubject<String, Never>()
        var received: [String] = []
        var finished = 0
        let cancellable = Publishers.CombineLatest(numbers, letters)
            .sink(receiveCompletion: { _ in finished += 1 }, receiveValue: { received.append("\($0)\($1)") })

        numbers.send(1)
        letters.send("a")
        numbers.send(completion: .finished)
        XCTAssertEqual(finished, 0, "one finished side must not finish the combination")

        letters.send("b")
        XCTAssertEqual(received, ["1a", "1b"], "the live side still combines with the finished side's last value")

        letters.send(completion: .finished)
        XCTAssertEqual(finished, 1)
        withExtendedLifetime(cancellable) {}
    }

    func testFailsWhenTheFirstSideFailsAndCancelsTheOtherSide() {
        let numbers = PassthroughSubject<Int, Boom>()
        let letters = PassthroughSubject<String, Boom>()
        let lettersCancelled = CancelCounter()
        let subscriber = ManualSubscriber<(Int, String), Boom>(initialDemand: .unlimited)
        Publishers.CombineLatest(numbers, letters.handleEvents(receiveCancel: { lettersCancelled.count += 1 }))
            .subscribe(subscriber)

        numbers.send(1)
        letters.send("a")
        numbers.send(completion: .failure(Boom()))

        XCTAssertEqual(subscriber.completions, [.failure(Boom())])
        XCTAssertEqual(lettersCancelled.count, 1, "the side that did not fail must be cancelled")

        letters.send("b")
        XCTAssertEqual(subscriber.values.count, 1, "nothing may arrive after the failure")
    }

    func testFailsWhenTheSecondSideFailsAndCancelsTheOtherSide() {
        let numbers = PassthroughSubject<Int, Boom>()
        let letters = PassthroughSubject<String, Boom>()
        let numbersCancelled = CancelCounter()
        let subscriber = ManualSubscriber<(Int, String), Boom>(initialDemand: .unlimited)
        Publishers.CombineLatest(numbers.handleEvents(receiveCancel: { numbersCancelled.count += 1 }), letters)
            .subscribe(subscriber)

        letters.send(completion: .failure(Boom()))

        XCTAssertEqual(subscriber.completions, [.failure(Boom())], "a failure needs no value first")
        XCTAssertEqual(numbersCancelled.count, 1)
        numbers.send(1)
        XCTAssertEqual(subscriber.values.count, 0)
        XCTAssertEqual(subscriber.completions.count, 1, "exactly one completion")
    }

    // MARK: Cancellation

    func testCancelStopsDeliveryAndCancelsBothUpstreams() {
        let numbers = PassthroughSubject<Int, Never>()
        let letters = PassthroughSubject<String, Never>()
        let numbersCancelled = CancelCounter()
        let lettersCancelled = CancelCounter()
        var received: [String] = []
        let cancellable = Publishers.CombineLatest(
            numbers.handleEvents(receiveCancel: { numbersCancelled.count += 1 }),
            letters.handleEvents(receiveCancel: { lettersCancelled.count += 1 })
        )
        .sink { received.append("\($0)\($1)") }

        numbers.send(1)
        letters.send("a")
        cancellable.cancel()
        numbers.send(2)
        letters.send("b")

        XCTAssertEqual(received, ["1a"])
        XCTAssertEqual(numbersCancelled.count, 1)
        XCTAssertEqual(lettersCancelled.count, 1)
    }

    // MARK: Demand

    func testRespectsDemandAndDeliversTheLatestPairWhenMoreIsRequested() {
        let numbers = PassthroughSubject<Int, Never>()
        let letters = PassthroughSubject<String, Never>()
        let subscriber = ManualSubscriber<(Int, String), Never>(initialDemand: .max(1))
        Publishers.CombineLatest(numbers, letters).subscribe(subscriber)
        let delivered = { subscriber.values.map { "\($0.0)\($0.1)" } }

        numbers.send(1)
        letters.send("a")
        XCTAssertEqual(delivered(), ["1a"])

        numbers.send(2)
        letters.send("b")
        numbers.send(3)
        XCTAssertEqual(delivered(), ["1a"], "no value beyond the demand of one")

        subscriber.subscription?.request(.max(1))
        XCTAssertEqual(delivered(), ["1a", "3b"], "more demand gets the latest pair, not the backlog")

        subscriber.subscription?.request(.max(1))
        XCTAssertEqual(delivered(), ["1a", "3b"], "nothing new happened, so nothing is repeated")

        letters.send("c")
        XCTAssertEqual(delivered(), ["1a", "3b", "3c"], "outstanding demand is used by the next change")

        letters.send("d")
        XCTAssertEqual(delivered(), ["1a", "3b", "3c"])
    }

    func testNoDemandMeansNoValues() {
        let numbers = PassthroughSubject<Int, Never>()
        let letters = PassthroughSubject<String, Never>()
        let subscriber = ManualSubscriber<(Int, String), Never>(initialDemand: .none)
        Publishers.CombineLatest(numbers, letters).subscribe(subscriber)

        numbers.send(1)
        letters.send("a")
        XCTAssertEqual(subscriber.values.count, 0)

        subscriber.subscription?.request(.max(2))
        XCTAssertEqual(subscriber.values.map { "\($0.0)\($0.1)" }, ["1a"])
    }

    // MARK: Three and four upstreams

    func testCombineLatest3DeliversTuplesInUpstreamOrder() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<String, Never>()
        let c = PassthroughSubject<Bool, Never>()
        var received: [String] = []
        let cancellable = Publishers.CombineLatest3(a, b, c)
            .sink { received.append("\($0)-\($1)-\($2)") }

        c.send(true)
        b.send("x")
        XCTAssertEqual(received, [])
        a.send(1)
        b.send("y")
        c.send(false)

        XCTAssertEqual(received, ["1-x-true", "1-y-true", "1-y-false"])
        withExtendedLifetime(cancellable) {}
    }

    func testCombineLatest3FromTheOperatorFinishesWhenAllThreeFinish() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        let c = PassthroughSubject<Int, Never>()
        var received: [[Int]] = []
        var finished = false
        let cancellable = a.combineLatest(b, c)
            .sink(receiveCompletion: { _ in finished = true }, receiveValue: { received.append([$0, $1, $2]) })

        a.send(1)
        b.send(2)
        c.send(3)
        a.send(completion: .finished)
        b.send(completion: .finished)
        XCTAssertFalse(finished)
        c.send(4)
        c.send(completion: .finished)

        XCTAssertEqual(received, [[1, 2, 3], [1, 2, 4]])
        XCTAssertTrue(finished)
        withExtendedLifetime(cancellable) {}
    }

    func testCombineLatest4DeliversTuplesInUpstreamOrder() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<String, Never>()
        let c = PassthroughSubject<Double, Never>()
        let d = PassthroughSubject<Character, Never>()
        var received: [String] = []
        let cancellable = Publishers.CombineLatest4(a, b, c, d)
            .sink { received.append("\($0)|\($1)|\($2)|\($3)") }

        d.send("z")
        c.send(0.5)
        b.send("b")
        XCTAssertEqual(received, [])
        a.send(1)
        d.send("w")
        a.send(2)

        XCTAssertEqual(received, ["1|b|0.5|z", "1|b|0.5|w", "2|b|0.5|w"])
        withExtendedLifetime(cancellable) {}
    }

    func testCombineLatest4RespectsDemand() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        let c = PassthroughSubject<Int, Never>()
        let d = PassthroughSubject<Int, Never>()
        let subscriber = ManualSubscriber<(Int, Int, Int, Int), Never>(initialDemand: .max(1))
        Publishers.CombineLatest4(a, b, c, d).subscribe(subscriber)
        let delivered = { subscriber.values.map { [$0.0, $0.1, $0.2, $0.3] } }

        a.send(1); b.send(2); c.send(3); d.send(4)
        a.send(10); d.send(40)
        XCTAssertEqual(delivered(), [[1, 2, 3, 4]])

        subscriber.subscription?.request(.max(1))
        XCTAssertEqual(delivered(), [[1, 2, 3, 4], [10, 2, 3, 40]])
    }
}
