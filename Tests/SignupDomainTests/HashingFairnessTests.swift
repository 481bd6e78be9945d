import Dispatch
import Foundation
import SignupDomain
import XCTest

/// A queue of sign-in guesses cannot delay sign-ups, one client cannot fill the queue, and
/// shutting down answers every queued job instead of leaving it hanging.
final class HashingFairnessTests: XCTestCase {
    /// Records which passwords entered, in order, and holds each until released.
    final class GatedHasher: PasswordHashing, @unchecked Sendable {
        private let lock = NSLock()
        private let gate = DispatchSemaphore(value: 0)
        private var entered: [String] = []
        let entries = DispatchSemaphore(value: 0)

        var order: [String] { lock.withLock { entered } }
        func release(_ count: Int = 1) { for _ in 0..<count { gate.signal() } }

        private func enter(_ password: String) {
            lock.withLock { entered.append(password) }
            entries.signal()
            gate.wait()
        }

        func hash(_ password: String) throws -> String {
            enter(password)
            return "hash:" + password
        }

        func verify(_ password: String, against hash: String) -> Bool {
            enter(password)
            return false
        }
    }

    func testASignUpRunsNextEvenBehindManyQueuedGuesses() throws {
        let hasher = GatedHasher()
        let queue = PasswordHashingQueue(hasher: hasher, maximumConcurrentJobs: 1)
        let done = DispatchGroup()
        // One guess runs; 100 more from 100 addresses wait; then a real sign-up arrives.
        for index in 0...100 {
            done.enter()
            try queue.verify("guess \(index)", against: "x", client: "10.0.0.\(index)") { _ in done.leave() }
        }
        XCTAssertEqual(hasher.entries.wait(timeout: .now() + 5), .success)
        done.enter()
        try queue.hash("sign-up", client: "192.0.2.1") { _ in done.leave() }

        hasher.release()
        XCTAssertEqual(hasher.entries.wait(timeout: .now() + 5), .success)
        XCTAssertEqual(hasher.order, ["guess 0", "sign-up"], "the sign-up took the next free slot")

        hasher.release(200)
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(hasher.order.count, 102)
    }

    func testOneClientMayOnlyHaveAFewJobsWaiting() throws {
        let hasher = GatedHasher()
        defer { hasher.release(10) }
        let queue = PasswordHashingQueue(hasher: hasher, maximumConcurrentJobs: 1, maximumJobsPerClient: 2)
        try queue.verify("a1", against: "x", client: "a") { _ in }
        try queue.verify("a2", against: "x", client: "a") { _ in }
        XCTAssertThrowsError(try queue.verify("a3", against: "x", client: "a") { _ in }) {
            XCTAssertEqual($0 as? HashingRefusal, .clientBusy)
        }
        // Another client is not affected, and neither is the first once a job finished.
        try queue.hash("b1", client: "b") { _ in }
        XCTAssertEqual(hasher.entries.wait(timeout: .now() + 5), .success)
        hasher.release()
        XCTAssertEqual(hasher.entries.wait(timeout: .now() + 5), .success)
        XCTAssertNoThrow(try queue.verify("a3", against: "x", client: "a") { _ in })
    }

    func testAFullLaneRefusesAtOnce() throws {
        let hasher = GatedHasher()
        defer { hasher.release(10) }
        let queue = PasswordHashingQueue(hasher: hasher, maximumConcurrentJobs: 1, maximumQueuedPerLane: 2)
        try queue.verify("running", against: "x") { _ in }
        XCTAssertEqual(hasher.entries.wait(timeout: .now() + 5), .success)
        try queue.verify("q1", against: "x") { _ in }
        try queue.verify("q2", against: "x") { _ in }
        XCTAssertThrowsError(try queue.verify("q3", against: "x") { _ in }) {
            XCTAssertEqual($0 as? HashingRefusal, .queueFull)
        }
        XCTAssertNoThrow(try queue.hash("sign-ups have their own lane") { _ in })
    }

    func testShutDownCancelsQueuedJobsAndLetsRunningOnesFinish() throws {
        let hasher = GatedHasher()
        let queue = PasswordHashingQueue(hasher: hasher, maximumConcurrentJobs: 1)
        let outcomes = Outcomes()
        let runningFinished = DispatchSemaphore(value: 0)
        try queue.hash("running") {
            outcomes.add("running", $0.map { _ in "hashed" })
            runningFinished.signal()
        }
        XCTAssertEqual(hasher.entries.wait(timeout: .now() + 5), .success)
        try queue.hash("queued") { outcomes.add("queued", $0.map { _ in "hashed" }) }
        try queue.verify("queued guess", against: "x") { result in
            outcomes.add("queued guess", result.map { "\($0)" }.mapError { $0 as Error })
        }

        queue.shutDown()
        XCTAssertEqual(outcomes.snapshot["queued"], "refused: the server is shutting down")
        XCTAssertEqual(outcomes.snapshot["queued guess"], "refused: the server is shutting down")
        XCTAssertThrowsError(try queue.hash("late") { _ in }) { XCTAssertEqual($0 as? HashingRefusal, .shuttingDown) }

        hasher.release()
        XCTAssertEqual(runningFinished.wait(timeout: .now() + 5), .success)
        XCTAssertEqual(outcomes.snapshot["running"], "hashed")
    }

    final class Outcomes: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [String: String] = [:]
        var snapshot: [String: String] { lock.withLock { values } }
        func add(_ name: String, _ result: Result<String, Error>) {
            let text: String
            switch result {
            case .success(let value): text = value
            case .failure(let error): text = "refused: \(error)"
            }
            lock.withLock { values[name] = text }
        }
    }
}
