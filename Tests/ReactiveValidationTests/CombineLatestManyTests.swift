import ReactiveValidation
import XCTest
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// `Publishers.CombineLatestMany`: `CombineLatest`'s semantics over any number of upstreams,
/// which a form whose fields are data combines (one input per declared field).
final class CombineLatestManyTests: XCTestCase {
    private struct Boom: Error, Equatable {}

    func testEmitsOnceEveryUpstreamHasAValueThenOnEachChangeInUpstreamOrder() {
        let subjects = (0..<6).map { _ in PassthroughSubject<Int, Never>() }
        var received: [[Int]] = []
        let subscription = Publishers.CombineLatestMany(subjects).sink { received.append($0) }
        defer { subscription.cancel() }
        for (index, subject) in subjects.enumerated().reversed() { subject.send(index * 10) }
        XCTAssertEqual(received, [[0, 10, 20, 30, 40, 50]], "nothing until the last upstream has spoken")
        subjects[3].send(31)
        subjects[3].send(32)
        subjects[0].send(1)
        XCTAssertEqual(received.dropFirst().map { $0 }, [[0, 10, 20, 31, 40, 50], [0, 10, 20, 32, 40, 50], [1, 10, 20, 32, 40, 50]])
    }

    func testCurrentValuesArriveAtSubscriptionAsOne() {
        let subjects = ["a", "b", "c", "d", "e"].map { CurrentValueSubject<String, Never>($0) }
        var received: [[String]] = []
        let subscription = Publishers.CombineLatestMany(subjects).sink { received.append($0) }
        defer { subscription.cancel() }
        XCTAssertEqual(received, [["a", "b", "c", "d", "e"]])
    }

    func testFinishesWhenAllFinishAndFailsWhenAnyFails() {
        let subjects = (0..<3).map { _ in PassthroughSubject<Int, Boom>() }
        var completions: [Subscribers.Completion<Boom>] = []
        let subscription = Publishers.CombineLatestMany(subjects).sink(receiveCompletion: { completions.append($0) },
                                                                     receiveValue: { _ in })
        subjects[0].send(completion: .finished)
        subjects[1].send(completion: .finished)
        XCTAssertTrue(completions.isEmpty)
        subjects[2].send(completion: .failure(Boom()))
        XCTAssertEqual(completions, [.failure(Boom())])
        subscription.cancel()

        let finishing = (0..<3).map { _ in PassthroughSubject<Int, Never>() }
        var finished = 0
        let second = Publishers.CombineLatestMany(finishing).sink(receiveCompletion: { _ in finished += 1 }, receiveValue: { _ in })
        finishing.forEach { $0.send(completion: .finished) }
        XCTAssertEqual(finished, 1)
        second.cancel()
    }

    func testCancellingReachesEveryUpstream() {
        var cancelled = 0
        let upstreams = (0..<4).map { _ in PassthroughSubject<Int, Never>().handleEvents(receiveCancel: { cancelled += 1 }) }
        let subscription = Publishers.CombineLatestMany(upstreams).sink { _ in }
        subscription.cancel()
        XCTAssertEqual(cancelled, 4)
    }
}
