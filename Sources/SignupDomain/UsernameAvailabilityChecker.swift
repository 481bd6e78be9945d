import Dispatch
import Foundation
import ReactiveValidation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// Answers "is this username free?" as a publisher, the shape the view model's
/// `switchToLatest` pipeline wants.
public protocol UsernameAvailabilityChecking: Sendable {
    /// `met` when free, `unmet` when taken, `pending` when the store could not say.
    func availability(of username: String) -> AnyPublisher<RequirementState, Never>
}

/// Looks names up in an `AccountStore` on a background queue, never on the caller's thread.
/// Reserved names are answered "taken" like used ones, after the same store look-up, so the
/// answer and its timing do not tell the two apart.
public struct StoreAvailabilityChecker: UsernameAvailabilityChecking {
    private let store: any AccountStore
    private let isReserved: @Sendable (String) -> Bool
    private let queue: DispatchQueue
    /// The clock holds of pending sign-ups end by.
    private let now: @Sendable () -> Date

    public init(
        store: any AccountStore,
        isReserved: @escaping @Sendable (String) -> Bool = { _ in false },
        queue: DispatchQueue = DispatchQueue(label: "username-availability", attributes: .concurrent),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.isReserved = isReserved
        self.queue = queue
        self.now = now
    }

    /// The answer for `username` right now: `met` free, `unmet` taken (by an account or a
    /// sign-up proving its address) or reserved.
    public func availabilityNow(of username: String) throws -> RequirementState {
        let taken = try store.isUsernameTaken(username, at: now())
        return taken || isReserved(username) ? .unmet : .met
    }

    public func availability(of username: String) -> AnyPublisher<RequirementState, Never> {
        let checker = self
        // Deferred so the look-up starts on subscription (after the debounce), not at creation.
        return Deferred {
            Future<RequirementState, Never> { promise in
                // A Future's promise may be called from any thread (it locks internally).
                nonisolated(unsafe) let promise = promise
                checker.queue.async {
                    promise(.success((try? checker.availabilityNow(of: username)) ?? .pending))
                }
            }
        }
        .eraseToAnyPublisher()
    }
}
