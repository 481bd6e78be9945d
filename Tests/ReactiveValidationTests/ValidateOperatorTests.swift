import CombineSchedulers
import Foundation
import ReactiveValidation
import XCTest
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// A field's rules with `latestAnswers(for:debounce:scheduler:)` combined as the view model
/// combines them: one evaluation per value, async checks debounced, deduplicated and never
/// overwritten by a stale answer.
final class ValidateOperatorTests: XCTestCase {
    /// Hands out one subject per check and lets the test answer each one when it likes.
    private final class CheckController: @unchecked Sendable {
        private let lock = NSLock()
        private var calls: [(value: String, subject: PassthroughSubject<RequirementState, Never>)] = []
        private var cancelled: [String] = []

        /// Every value checked, in order.
        var checkedValues: [String] {
            lock.lock(); defer { lock.unlock() }
            return calls.map(\.value)
        }

        /// Values whose check was cancelled before it answered.
        var cancelledValues: [String] {
            lock.lock(); defer { lock.unlock() }
            return cancelled
        }

        func check(_ value: String) -> AnyPublisher<RequirementState, Never> {
            let subject = PassthroughSubject<RequirementState, Never>()
            lock.lock()
            calls.append((value, subject))
            lock.unlock()
            return subject
                .handleEvents(receiveCancel: { [weak self] in self?.recordCancel(value) })
                .eraseToAnyPublisher()
        }

        /// Answers the `index`-th check (0-based) and completes it.
        func answer(check index: Int, with state: RequirementState) {
            lock.lock()
            let subject = calls[index].subject
            lock.unlock()
            subject.send(state)
            subject.send(completion: .finished)
        }

        private func recordCancel(_ value: String) {
            lock.lock()
            cancelled.append(value)
            lock.unlock()
        }
    }

    /// Two rules in priority order: at least 3 characters, then lowercase only.
    private let rules = FieldRules<String>(
        rules: [
            Rule(id: "test.length", text: "At least 3 characters", message: "Too short",
                 isMet: { $0.count >= 3 }),
            Rule(id: "test.lowercase", text: "Lowercase only", message: "Lowercase only",
                 isMet: { !$0.isEmpty && $0 == $0.lowercased() }),
        ],
        emptyMessage: "Enter something")

    private let debounce = DispatchQueue.SchedulerTimeType.Stride.milliseconds(300)

    private func asyncRule(_ controller: CheckController) -> AsyncRule<String> {
        let rules = self.rules
        return AsyncRule(
            id: "test.available", text: "Not taken",
            isEligible: { rules.allMet(by: $0) },
            check: { controller.check($0) })
    }

    private func evaluation(_ value: String, _ states: RequirementState...) -> FieldEvaluation<String> {
        FieldEvaluation(value: value, states: states)
    }

    // MARK: Synchronous rules

    func testEveryValueGetsOneEvaluationWithStatesInRuleOrder() {
        let scheduler = DispatchQueue.test
        let input = PassthroughSubject<String, Never>()
        var received: [FieldEvaluation<String>] = []
        let cancellable = input
            .validate(with: rules, debounce: debounce, scheduler: scheduler)
            .sink { received.append($0) }

        input.send("")
        input.send("ab")
        input.send("abc")
        input.send("ABC")

        XCTAssertEqual(received, [
            evaluation("", .unmet, .unmet),
            evaluation("ab", .unmet, .met),
            evaluation("abc", .met, .met),
            evaluation("ABC", .met, .unmet),
        ])
        XCTAssertEqual(received.map(\.allMet), [false, false, true, false])

        scheduler.advance(by: .seconds(1))
        XCTAssertEqual(received.count, 4, "without an async rule time adds nothing")
        withExtendedLifetime(cancellable) {}
    }

    func testARepeatedValueIsNotEmittedAgain() {
        let scheduler = DispatchQueue.test
        let input = PassthroughSubject<String, Never>()
        var received: [FieldEvaluation<String>] = []
        let cancellable = input
            .validate(with: rules, debounce: debounce, scheduler: scheduler)
            .sink { received.append($0) }

        input.send("abc")
        input.send("abc")
        input.send("ABC")
        input.send("ABC")
        input.send("abc")

        XCTAssertEqual(received.map(\.value), ["abc", "ABC", "abc"])
        withExtendedLifetime(cancellable) {}
    }

    func testEachEvaluationUsesTheRulesOfItsOwnValue() {
        let scheduler = DispatchQueue.test
        let input = CurrentValueSubject<String, Never>("x")
        var received: [FieldEvaluation<String>] = []
        let cancellable = input
            .validate(with: rules, debounce: debounce, scheduler: scheduler)
            .sink { received.append($0) }

        XCTAssertEqual(received, [evaluation("x", .unmet, .met)], "the current value is evaluated on subscription")
        input.value = "xyz"
        XCTAssertEqual(received.last, evaluation("xyz", .met, .met))
        withExtendedLifetime(cancellable) {}
    }

    // MARK: Asynchronous rule

    func testIneligibleValuesAreUnmetAndNeverChecked() {
        let scheduler = DispatchQueue.test
        let controller = CheckController()
        let input = PassthroughSubject<String, Never>()
        var received: [FieldEvaluation<String>] = []
        let cancellable = input
            .validate(with: rules, asyncRule: asyncRule(controller), debounce: debounce, scheduler: scheduler)
            .sink { received.append($0) }

        input.send("ab")
        XCTAssertEqual(received, [evaluation("ab", .unmet, .met, .unmet)])
        scheduler.advance(by: .seconds(1))

        input.send("ABC")
        XCTAssertEqual(received.last, evaluation("ABC", .met, .unmet, .unmet))
        scheduler.advance(by: .seconds(1))

        XCTAssertEqual(controller.checkedValues, [])
        XCTAssertEqual(received.count, 2)
        withExtendedLifetime(cancellable) {}
    }

    func testAnEligibleValueIsPendingUntilItsAnswerArrives() {
        let scheduler = DispatchQueue.test
        let controller = CheckController()
        let input = PassthroughSubject<String, Never>()
        var received: [FieldEvaluation<String>] = []
        let cancellable = input
            .validate(with: rules, asyncRule: asyncRule(controller), debounce: debounce, scheduler: scheduler)
            .sink { received.append($0) }

        input.send("abc")
        XCTAssertEqual(received, [evaluation("abc", .met, .met, .pending)])

        scheduler.advance(by: .milliseconds(299))
        XCTAssertEqual(controller.checkedValues, [], "no check before the value has been still for the debounce")
        scheduler.advance(by: .milliseconds(1))
        XCTAssertEqual(controller.checkedValues, ["abc"])
        XCTAssertEqual(received, [evaluation("abc", .met, .met, .pending)], "still pending while the check runs")

        controller.answer(check: 0, with: .unmet)
        scheduler.advance()
        XCTAssertEqual(received, [
            evaluation("abc", .met, .met, .pending),
            evaluation("abc", .met, .met, .unmet),
        ])
        withExtendedLifetime(cancellable) {}
    }

    func testABurstOfEditsWithinTheDebounceCausesExactlyOneCheckForTheLastValue() {
        let scheduler = DispatchQueue.test
        let controller = CheckController()
        let input = PassthroughSubject<String, Never>()
        var received: [FieldEvaluation<String>] = []
        let cancellable = input
            .validate(with: rules, asyncRule: asyncRule(controller), debounce: debounce, scheduler: scheduler)
            .sink { received.append($0) }

        for value in ["abc", "abcd", "abcde", "abcdef"] {
            input.send(value)
            scheduler.advance(by: .milliseconds(200))
        }
        XCTAssertEqual(controller.checkedValues, [])
        scheduler.advance(by: .milliseconds(100))
        XCTAssertEqual(controller.checkedValues, ["abcdef"])
        scheduler.advance(by: .seconds(5))
        XCTAssertEqual(controller.checkedValues, ["abcdef"], "the quiet period must not check again")

        XCTAssertEqual(received.map(\.value), ["abc", "abcd", "abcde", "abcdef"], "one evaluation per keystroke")
        XCTAssertTrue(received.allSatisfy { $0.states.last == .pending })

        controller.answer(check: 0, with: .met)
        scheduler.advance()
        XCTAssertEqual(received.last, evaluation("abcdef", .met, .met, .met))
        withExtendedLifetime(cancellable) {}
    }

    func testAnAnswerForAnOlderValueNeverAppliesToTheCurrentOne() {
        let scheduler = DispatchQueue.test
        let controller = CheckController()
        let input = PassthroughSubject<String, Never>()
        var received: [FieldEvaluation<String>] = []
        let cancellable = input
            .validate(with: rules, asyncRule: asyncRule(controller), debounce: debounce, scheduler: scheduler)
            .sink { received.append($0) }

        input.send("alice")
        scheduler.advance(by: .milliseconds(300))
        input.send("bobby")
        // The answer for "alice" arrives while "bobby" is still waiting for its debounce.
        controller.answer(check: 0, with: .met)
        scheduler.advance()

        XCTAssertEqual(received.last, evaluation("bobby", .met, .met, .pending))
        XCTAssertFalse(received.contains(evaluation("bobby", .met, .met, .met)))
        withExtendedLifetime(cancellable) {}
    }

    func testASlowAnswerForAnOlderCheckNeverWinsOverANewerCheck() {
        let scheduler = DispatchQueue.test
        let controller = CheckController()
        let input = PassthroughSubject<String, Never>()
        var received: [FieldEvaluation<String>] = []
        let cancellable = input
            .validate(with: rules, asyncRule: asyncRule(controller), debounce: debounce, scheduler: scheduler)
            .sink { received.append($0) }

        input.send("alice")
        scheduler.advance(by: .milliseconds(300))   // check 0: "alice"
        input.send("bobby")
        scheduler.advance(by: .milliseconds(300))   // check 1: "bobby"
        input.send("alice")
        scheduler.advance(by: .milliseconds(300))   // check 2: "alice" again
        XCTAssertEqual(controller.checkedValues, ["alice", "bobby", "alice"])
        XCTAssertEqual(controller.cancelledValues, ["alice", "bobby"], "a newer check cancels the older one")

        // The first, slow "alice" check answers after a newer "alice" check started.
        controller.answer(check: 0, with: .unmet)
        controller.answer(check: 1, with: .unmet)
        scheduler.advance()
        XCTAssertEqual(received.last, evaluation("alice", .met, .met, .pending),
                       "an answer from a superseded check must not decide the current value")

        controller.answer(check: 2, with: .met)
        scheduler.advance()
        XCTAssertEqual(received.last, evaluation("alice", .met, .met, .met))
        XCTAssertFalse(received.contains(evaluation("alice", .met, .met, .unmet)))
        XCTAssertFalse(received.contains(evaluation("bobby", .met, .met, .unmet)))
        withExtendedLifetime(cancellable) {}
    }

    func testReturningToAnAnsweredValueWithinTheDebounceReusesItsAnswer() {
        let scheduler = DispatchQueue.test
        let controller = CheckController()
        let input = PassthroughSubject<String, Never>()
        var received: [FieldEvaluation<String>] = []
        let cancellable = input
            .validate(with: rules, asyncRule: asyncRule(controller), debounce: debounce, scheduler: scheduler)
            .sink { received.append($0) }

        input.send("alice")
        scheduler.advance(by: .milliseconds(300))
        controller.answer(check: 0, with: .met)
        scheduler.advance()
        XCTAssertEqual(received.last, evaluation("alice", .met, .met, .met))

        input.send("alic")
        XCTAssertEqual(received.last, evaluation("alic", .met, .met, .pending))
        scheduler.advance(by: .milliseconds(100))
        input.send("alice")
        XCTAssertEqual(received.last, evaluation("alice", .met, .met, .met),
                       "the answer for this exact value is still known")
        scheduler.advance(by: .seconds(1))

        XCTAssertEqual(controller.checkedValues, ["alice"], "no second look-up for a value already answered")
        XCTAssertEqual(received.last, evaluation("alice", .met, .met, .met))
        withExtendedLifetime(cancellable) {}
    }

    func testAValueThatBecomesIneligibleStopsBeingPendingAtOnce() {
        let scheduler = DispatchQueue.test
        let controller = CheckController()
        let input = PassthroughSubject<String, Never>()
        var received: [FieldEvaluation<String>] = []
        let cancellable = input
            .validate(with: rules, asyncRule: asyncRule(controller), debounce: debounce, scheduler: scheduler)
            .sink { received.append($0) }

        input.send("alice")
        scheduler.advance(by: .milliseconds(300))
        input.send("al")
        XCTAssertEqual(received.last, evaluation("al", .unmet, .met, .unmet))
        scheduler.advance(by: .milliseconds(300))
        XCTAssertEqual(controller.cancelledValues, ["alice"], "the outdated look-up is dropped")

        controller.answer(check: 0, with: .met)
        scheduler.advance()
        XCTAssertEqual(received.last, evaluation("al", .unmet, .met, .unmet))
        XCTAssertEqual(controller.checkedValues, ["alice"])
        withExtendedLifetime(cancellable) {}
    }
}

private extension Publisher where Failure == Never, Output: Equatable {
    /// One field's evaluations, built the way `SignupViewModel` builds the form's: the value
    /// combined with the latest answer of its asynchronous rule, evaluated, deduplicated.
    /// (`self` is subscribed twice, not `share()`d: a shared publisher would hand its
    /// current value to the first subscriber only.)
    func validate<S: Scheduler>(
        with rules: FieldRules<Output>, asyncRule: AsyncRule<Output>? = nil,
        debounce: S.SchedulerTimeType.Stride, scheduler: S
    ) -> AnyPublisher<FieldEvaluation<Output>, Never> {
        let answers = asyncRule.map { latestAnswers(for: $0, debounce: debounce, scheduler: scheduler) }
            ?? Just(nil).eraseToAnyPublisher()
        return combineLatest(answers)
            .map { value, answer in rules.evaluate(value, asyncRule: asyncRule, answer: answer) }
            .removeDuplicates()
            .eraseToAnyPublisher()
    }
}
