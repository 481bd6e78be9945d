import Foundation
import ReactiveValidation
import SignupDomain
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// A `UsernameAvailabilityChecking` that records every name it is asked about and answers
/// each look-up only when the test says so.
final class FakeAvailabilityChecker: UsernameAvailabilityChecking, @unchecked Sendable {
    private let lock = NSLock()
    private var lookups: [(username: String, subject: PassthroughSubject<RequirementState, Never>)] = []
    private var cancelled: [String] = []

    /// Every name looked up, in order.
    var requestedUsernames: [String] {
        lock.lock(); defer { lock.unlock() }
        return lookups.map(\.username)
    }

    /// Names whose look-up was cancelled before answering.
    var cancelledUsernames: [String] {
        lock.lock(); defer { lock.unlock() }
        return cancelled
    }

    func availability(of username: String) -> AnyPublisher<RequirementState, Never> {
        let subject = PassthroughSubject<RequirementState, Never>()
        lock.lock()
        lookups.append((username, subject))
        lock.unlock()
        return subject
            .handleEvents(receiveCancel: { [weak self] in self?.recordCancel(username) })
            .eraseToAnyPublisher()
    }

    /// Answers the `index`-th look-up (0-based) and completes it.
    func answer(_ index: Int, with state: RequirementState) {
        lock.lock()
        let subject = lookups[index].subject
        lock.unlock()
        subject.send(state)
        subject.send(completion: .finished)
    }

    /// Answers the most recent look-up.
    func answerLatest(with state: RequirementState) {
        answer(requestedUsernames.count - 1, with: state)
    }

    private func recordCancel(_ username: String) {
        lock.lock()
        cancelled.append(username)
        lock.unlock()
    }
}
