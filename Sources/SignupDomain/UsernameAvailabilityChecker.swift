import Dispatch
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
public struct StoreAvailabilityChecker: UsernameAvailabilityChecking {
    private let store: any AccountStore
    private let queue: DispatchQueue

    public init(store: any AccountStore, queue: DispatchQueue = DispatchQueue(label: "username-availability", attributes: .concurrent)) {
        self.store = store
        self.queue = queue
    }

    public func availability(of username: String) -> AnyPublisher<RequirementState, Never> {
        let store = self.store
        let queue = self.queue
        // Deferred so the look-up starts on subscription (after the debounce), not at creation.
        return Deferred {
            Future<RequirementState, Never> { promise in
                // A Future's promise may be called from any thread (it locks internally).
                nonisolated(unsafe) let promise = promise
                queue.async {
                    let taken = try? store.isUsernameTaken(username)
                    promise(.success(taken.map { $0 ? .unmet : .met } ?? .pending))
                }
            }
        }
        .eraseToAnyPublisher()
    }
}
