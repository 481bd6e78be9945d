import Foundation
import HTTPTestSupport
import ReactiveValidation
import XCTest
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// `SharedTimerScheduler`: delayed work runs on its queue, never early, in deadline order;
/// cancelled work never runs; one timer serves every scheduler. Waits are bounded
/// conditions on real time (this scheduler is the real-time one the server injects).
final class SharedTimerSchedulerTests: XCTestCase {
    private final class Log: @unchecked Sendable {
        private let lock = NSLock()
        private var entries: [String] = []
        func append(_ entry: String) { lock.withLock { entries.append(entry) } }
        var all: [String] { lock.withLock { entries } }
    }

    func testDelayedActionsRunOnTheirQueueInDeadlineOrderAndNeverEarly() {
        let timers = DeadlineTimers()
        let key = DispatchSpecificKey<String>()
        let first = DispatchQueue(label: "first"), second = DispatchQueue(label: "second")
        first.setSpecific(key: key, value: "first")
        second.setSpecific(key: key, value: "second")
        let log = Log()
        let start = DispatchTime.now()
        for (queue, delay) in [(first, 60), (second, 20), (first, 40)] {
            let scheduler = SharedTimerScheduler(queue: queue, timers: timers)
            let due = start + .milliseconds(delay)
            scheduler.schedule(after: .init(due), tolerance: .seconds(0), options: nil) {
                let early = DispatchTime.now() < due
                log.append("\(delay) on \(DispatchQueue.getSpecific(key: key) ?? "?")\(early ? " EARLY" : "")")
            }
        }
        XCTAssertTrue(Condition.wait(timeout: 5) { log.all.count == 3 })
        XCTAssertEqual(log.all, ["20 on second", "40 on first", "60 on first"])
        XCTAssertTrue(Condition.wait(timeout: 5) { timers.pendingCount == 0 }, "nothing left behind")
    }

    func testDeadlinesCloseTogetherShareOneWakeUpAndNoneRunsEarly() {
        let timers = DeadlineTimers()
        let log = Log()
        // Twenty people's debounces, a quarter of a millisecond apart: within two slots.
        let start = DispatchTime.now() + .milliseconds(50)
        for index in 0..<20 {
            let scheduler = SharedTimerScheduler(queue: DispatchQueue(label: "person \(index)"), timers: timers)
            let due = start + .microseconds(250 * index)
            scheduler.schedule(after: .init(due), tolerance: .seconds(0), options: nil) {
                log.append(DispatchTime.now() < due ? "EARLY" : "on time")
            }
        }
        XCTAssertTrue(Condition.wait(timeout: 5) { log.all.count == 20 })
        XCTAssertEqual(Set(log.all), ["on time"])
        XCTAssertLessThanOrEqual(timers.wakeUps, 2, "a wake-up per deadline instead of per slot")
    }

    func testACancelledActionNeverRunsAndIsReleased() {
        let timers = DeadlineTimers()
        let scheduler = SharedTimerScheduler(queue: DispatchQueue(label: "q"), timers: timers)
        let log = Log()
        final class Captured {}
        weak var weakCaptured: Captured?
        let cancellable: Cancellable = {
            let captured = Captured()
            weakCaptured = captured
            return scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(30)), interval: .seconds(1),
                                      tolerance: .seconds(0), options: nil) { log.append("cancelled \(captured)") }
        }()
        scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(60)), tolerance: .seconds(0), options: nil) {
            log.append("kept")
        }
        cancellable.cancel()
        XCTAssertNil(weakCaptured, "cancelling releases what the action captured")
        XCTAssertTrue(Condition.wait(timeout: 5) { log.all == ["kept"] })
        XCTAssertTrue(Condition.wait(timeout: 5) { timers.pendingCount == 0 })
        XCTAssertEqual(log.all, ["kept"])
    }

    func testARepeatingActionRepeatsUntilCancelled() {
        let timers = DeadlineTimers()
        let scheduler = SharedTimerScheduler(queue: DispatchQueue(label: "q"), timers: timers)
        let log = Log()
        let cancellable = scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(10)),
                                             interval: .milliseconds(10), tolerance: .seconds(0), options: nil) {
            log.append("tick")
        }
        XCTAssertTrue(Condition.wait(timeout: 5) { log.all.count >= 3 })
        cancellable.cancel()
        let ticks = log.all.count
        XCTAssertTrue(Condition.wait(timeout: 5) { timers.pendingCount == 0 }, "the cancelled entry is dropped when due")
        XCTAssertLessThanOrEqual(log.all.count, ticks + 1, "at most one tick already handed to the queue")
    }

    /// The server's view models debounce through it: a burst of values yields the last one,
    /// once, after the quiet period.
    func testDebounceThroughItEmitsTheLastValueOnce() {
        let scheduler = SharedTimerScheduler(queue: DispatchQueue(label: "q"), timers: DeadlineTimers())
        let subject = PassthroughSubject<String, Never>()
        let log = Log()
        let cancellable = subject.debounce(for: .milliseconds(50), scheduler: scheduler).sink { log.append($0) }
        for value in ["a", "al", "ali", "alic", "alice"] { subject.send(value) }
        XCTAssertTrue(Condition.wait(timeout: 5) { !log.all.isEmpty })
        subject.send("alice2")
        XCTAssertTrue(Condition.wait(timeout: 5) { log.all.count == 2 })
        XCTAssertEqual(log.all, ["alice", "alice2"])
        withExtendedLifetime(cancellable) {}
    }
    /// A form session works on its view model from request threads holding its lock, and
    /// gives the scheduler that lock: every scheduled action, immediate, delayed or
    /// repeating, runs holding it, so it never runs while a request is inside the session.
    func testActionsRunHoldingTheOwnersLockAndWaitWhileItIsHeld() {
        let lock = NSLock(), timers = DeadlineTimers()
        let scheduler = SharedTimerScheduler(queue: DispatchQueue(label: "q"), lock: lock, timers: timers)
        let log = Log(), owner = Log()
        // `try()` on a lock this thread holds fails: it says the action runs inside it.
        let record: @Sendable (String) -> Void = { name in
            let ownerInside = owner.all.last == "inside"
            log.append(name + (ownerInside ? " while the owner was inside" : "") + (lock.try() ? " without the lock" : ""))
        }
        lock.lock()
        owner.append("inside")
        scheduler.schedule { record("now") }
        scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(5)), tolerance: .seconds(0), options: nil) {
            record("delayed")
        }
        let repeating = scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(5)), interval: .seconds(60),
                                           tolerance: .seconds(0), options: nil) { record("repeating") }
        // The timer hands the delayed actions to the queue while the owner is inside.
        XCTAssertTrue(Condition.wait(timeout: 5) { timers.wakeUps >= 1 })
        owner.append("left")
        lock.unlock()
        XCTAssertTrue(Condition.wait(timeout: 5) { log.all.count == 3 })
        XCTAssertEqual(Set(log.all), ["now", "delayed", "repeating"])
        repeating.cancel()
    }
}
