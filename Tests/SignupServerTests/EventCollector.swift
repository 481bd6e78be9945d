import Foundation
import HTTPTestSupport
import LiveSignupClient
import XCTest

/// Collects the typed events of one stream in the background, so a test can wait (with a
/// bounded timeout, never a fixed delay) until the events it expects have arrived.
final class EventCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [SignupEvent] = []
    private var failure: Error?
    private var task: Task<Void, Never>?

    init(_ stream: AsyncThrowingStream<SignupEvent, Error>) {
        task = Task { [weak self] in
            do {
                for try await event in stream { self?.append(event) }
            } catch {
                self?.fail(error)
            }
        }
    }

    deinit { task?.cancel() }

    func stop() { task?.cancel() }

    var events: [SignupEvent] { lock.withLock { collected } }

    /// Waits until `predicate` holds for the events so far; fails the test on timeout.
    @discardableResult
    func wait(
        timeout: TimeInterval = 5,
        file: StaticString = #filePath, line: UInt = #line,
        until predicate: @escaping ([SignupEvent]) -> Bool
    ) async -> [SignupEvent] {
        // Called only by the waiting task, one call at a time.
        nonisolated(unsafe) let predicate = predicate
        let arrived = await Condition.wait(timeout: timeout) { [self] in predicate(self.events) }
        let (events, error) = lock.withLock { (collected, failure) }
        if !arrived {
            XCTFail("Timed out; events so far: \(events); stream error: \(String(describing: error))",
                    file: file, line: line)
        }
        return events
    }

    /// Waits for at least `count` events.
    @discardableResult
    func wait(forCount count: Int, file: StaticString = #filePath, line: UInt = #line) async -> [SignupEvent] {
        await wait(file: file, line: line) { $0.count >= count }
    }

    private func append(_ event: SignupEvent) {
        lock.withLock { collected.append(event) }
    }

    private func fail(_ error: Error) {
        lock.withLock { failure = error }
    }
}
