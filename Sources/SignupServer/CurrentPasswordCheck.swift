import Foundation
import SignupDomain
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// "Is this the account's password now?" for a recovery's live new-password form
/// (`password.not_current`): an argon2id verification against the account's hash, in the
/// hashing queue's sign-in lane and charged to the client like a sign-in's, so typing here
/// never delays a sign-up's hash. Asked once per pause in typing (the view model debounces).
struct CurrentPasswordCheck: CurrentPasswordChecking {
    let hash: String
    let hashing: PasswordHashingQueue
    /// The client's rate-limit key: its hashes count against `--hashes-per-address`.
    let client: String

    func state(of password: String) -> AnyPublisher<RequirementState, Never> {
        let hash = hash, hashing = hashing, client = client
        return Deferred {
            Future<RequirementState, Never> { promise in
                // A Future's promise may be called from any thread (it locks internally).
                nonisolated(unsafe) let promise = promise
                do throws(HashingRefusal) {
                    try hashing.verify(password, against: hash, client: client) { outcome in
                        // A refused check (the queue full, this client's hashes busy) says
                        // nothing: met, and the submit checks again before anything is stored.
                        promise(.success((try? outcome.get()) == true ? .unmet : .met))
                    }
                } catch {
                    promise(.success(.met))
                }
            }
        }
        .eraseToAnyPublisher()
    }
}
