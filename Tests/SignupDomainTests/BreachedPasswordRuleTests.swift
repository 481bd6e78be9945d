import CombineSchedulers
import Foundation
import ReactiveValidation
import SignupDomain
import XCTest
import Locking

/// `password.breached` in the view model: one look-up per settled password, the count in a
/// kind message, nothing looked up for short passwords, and a failing source falls back to
/// the built-in list instead of blocking anyone.
final class BreachedPasswordRuleTests: XCTestCase {
    /// A breach source with a fixed answer per password that counts its look-ups, or fails.
    private final class FakeLookup: BreachedPasswordLookup, @unchecked Sendable {
        let lock = NSLock()
        var seen: [String: Int] = [:]
        var failing = false
        var hashesAskedFor: [String] = []

        func timesSeen(sha1 hash: String) throws -> Int {
            try lock.withLock {
                hashesAskedFor.append(hash)
                if failing { throw BreachedPasswordError("the source is down") }
                return seen[hash] ?? 0
            }
        }
    }

    private struct Harness {
        let model: SignupViewModel
        let lookups: Lookups
        let lookup: FakeLookup
        let checker: BreachedPasswordChecker
        let scheduler: TestSchedulerOf<DispatchQueue>
        let lookupQueue: DispatchQueue

        /// Lets the debounce pass, the look-up finish on its queue, and its answer arrive.
        func settle() {
            scheduler.advance(by: .milliseconds(300))
            lookupQueue.sync {}
            scheduler.advance()
        }
    }

    private func makeHarness(seen: [String: Int] = [:]) -> Harness {
        let lookup = FakeLookup()
        lookup.seen = Dictionary(uniqueKeysWithValues: seen.map { (BreachedPasswords.sha1(of: $0.key), $0.value) })
        let lookupQueue = DispatchQueue(label: "test-breach-lookups")
        let checker = BreachedPasswordChecker(lookup: lookup, run: { lookupQueue.async(execute: $0); return true })
        let scheduler = DispatchQueue.test
        let lookups = Lookups(breachedPasswords: checker)
        let policy = FormPolicy(.classic, strengthEstimator: LengthStrengthEstimator(), lookups: lookups.kinds)
        let model = SignupViewModel(policy: policy, availabilityChecker: FakeAvailabilityChecker(), lookups: lookups,
                                    scheduler: scheduler.eraseToAnyScheduler())
        return Harness(model: model, lookups: lookups, lookup: lookup, checker: checker, scheduler: scheduler, lookupQueue: lookupQueue)
    }

    func testTheRequirementIsListedOnlyWhenASourceIsConfigured() {
        XCTAssertEqual(makeHarness().model.policy.requirements(for: .password).last?.id, "password.breached")
        XCTAssertEqual(makeHarness().model.policy.requirements(for: .password).last?.text, "Not found in a known data breach")
        XCTAssertFalse(FormPolicy(.classic).allRequirements.contains { $0.id == "password.breached" })
    }

    func testABurstOfKeystrokesCostsOneLookUpOfTheSettledPassword() {
        let harness = makeHarness()
        let password = "Correct-Horse-7-Lantern"
        for length in 1...password.count {
            harness.model.password = String(password.prefix(length))
        }
        XCTAssertEqual(harness.model.requirementStates["password.breached"], .pending, "long enough, not yet answered")
        harness.settle()
        XCTAssertEqual(harness.lookup.hashesAskedFor, [BreachedPasswords.sha1(of: password)], "one look-up, of the settled value")
        XCTAssertEqual(harness.model.requirementStates["password.breached"], .met)
    }

    func testShortPasswordsAreNeverLookedUp() {
        let harness = makeHarness()
        harness.model.password = "Abc1"
        harness.settle()
        XCTAssertEqual(harness.lookup.hashesAskedFor, [])
        XCTAssertEqual(harness.model.requirementStates["password.breached"], .unmet)
    }

    func testABreachedPasswordIsUnmetWithItsCountPhrasedKindly() {
        let breached = "Sunshine-2024-Garden"
        let harness = makeHarness(seen: [breached: 3861])
        harness.model.password = breached
        harness.model.touchedFields = [.password]
        harness.settle()
        XCTAssertEqual(harness.model.requirementStates["password.breached"], .unmet)
        XCTAssertFalse(harness.model.isSubmitEnabled)
        XCTAssertEqual(harness.model.fieldValidations[.password]?.message,
                       "We found this password in known data breaches (3,861 times so far), so attackers try it early. Please choose a different one; a few unrelated words work well")
    }

    func testACountOfOneHasItsOwnSentenceAndCountsUseTheLanguagesGrouping() {
        let once = "Sunshine-2024-Garden", often = "Autumn-Leaves-1987"
        let harness = makeHarness(seen: [once: 1, often: 3861])
        let policy = harness.model.policy, lookups = harness.lookups
        func message(_ policy: FormPolicy, _ password: String) -> String? {
            policy.evaluateSubmission(
                username: "alice_01", email: "alice@example.com", password: password, confirm: password,
                usernameAvailability: .met, breach: lookups.breachStateNow(for: password, in: policy),
                breaches: lookups.breachedPasswords
            ).problems.first { $0.field == .password }?.message
        }
        XCTAssertEqual(message(policy, once),
                       "We found this password in a known data breach, so attackers may try it. Please choose a different one; a few unrelated words work well")
        let german = policy.localized(PolicyTexts([.numberGroupSeparator: ".", .passwordBreachedMessage: "bisher {count}-mal"]))
        XCTAssertEqual(message(german, often), "bisher 3.861-mal", "3,861 would read as a decimal in German")
    }

    func testAnAnswerForAnOlderPasswordNeverCounts() {
        let breached = "Sunshine-2024-Garden"
        let harness = makeHarness(seen: [breached: 12])
        harness.model.password = breached
        harness.settle()
        harness.model.password = breached + "x"
        XCTAssertEqual(harness.model.requirementStates["password.breached"], .pending,
                       "the answer was for the previous value")
    }

    func testAFailingSourceFallsBackToTheBuiltInList() {
        let harness = makeHarness()
        harness.lookup.failing = true
        harness.model.password = "Correct-Horse-7-Lantern"
        harness.settle()
        XCTAssertEqual(harness.model.requirementStates["password.breached"], .met, "fail-open: not on the built-in list")
        let common = try! XCTUnwrap(["password123", "iloveyou1", "qwertyuiop"].first { CommonPasswords.builtIn.contains($0) })
        harness.model.password = common
        harness.model.touchedFields = [.password]
        harness.settle()
        XCTAssertEqual(harness.model.requirementStates["password.breached"], .unmet, "the built-in list still answers")
        XCTAssertEqual(harness.checker.sourceFailures, 2)
    }

    /// A submitted form's look-up has a lane of its own: with every live look-up stuck behind
    /// a slow source (here, a lane that never runs), the sign-up's check is still answered.
    func testTheSubmitCheckIsNotQueuedBehindLiveLookUps() {
        let lookup = FakeLookup()
        lookup.seen = [BreachedPasswords.sha1(of: "Sunshine-2024-Garden"): 3]
        let stuck = Locked<[@Sendable () -> Void]>([])
        let checker = BreachedPasswordChecker(lookup: lookup, run: { work in stuck.withLock { $0.append(work) }; return true },
                                              runSubmitted: { $0(); return true })
        let lookups = Lookups(breachedPasswords: checker)
        let policy = FormPolicy(.classic, strengthEstimator: LengthStrengthEstimator(), lookups: lookups.kinds)
        checker.verdict(for: "Typing-Along-Slowly-1") { _ in XCTFail("the live lane never runs in this test") }
        let answered = Locked<RequirementState??>(nil)
        lookups.breachState(for: "Sunshine-2024-Garden", in: policy) { state in answered.withLock { $0 = state } }
        XCTAssertEqual(answered.withLock { $0 }, .some(.some(.unmet)), "answered in its own lane, at once")
        XCTAssertEqual(stuck.withLock { $0.count }, 1, "the live look-up still waits")
    }

    func testTheSubmitCheckLooksThePasswordUpToo() {
        let breached = "Sunshine-2024-Garden"
        let harness = makeHarness(seen: [breached: 5])
        let policy = harness.model.policy, lookups = harness.lookups
        XCTAssertEqual(lookups.breachStateNow(for: breached, in: policy), .unmet)
        XCTAssertEqual(lookups.breachStateNow(for: "Correct-Horse-7-Lantern", in: policy), .met)
        XCTAssertNil(Lookups.none.breachStateNow(for: breached, in: policy), "no source: nothing to say")
        let evaluation = policy.evaluateSubmission(
            username: "alice_01", email: "alice@example.com", password: breached, confirm: breached,
            usernameAvailability: .met, breach: lookups.breachStateNow(for: breached, in: policy),
            breaches: lookups.breachedPasswords)
        XCTAssertFalse(evaluation.isValid)
        XCTAssertTrue(evaluation.problems.contains { $0.field == .password && $0.message.contains("(5 times so far)") },
                      "\(evaluation.problems)")
    }
}
