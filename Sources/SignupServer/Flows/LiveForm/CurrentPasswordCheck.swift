import Foundation
import Identity
import SignupDomain
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
import WebKernel
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
    /// What opened the form: the check answers only while it is open (issue 52).
    let lifeline: Lifeline

    /// Until when a form's "not your current password" check answers: while the recovery or
    /// the signed-in session that opened the form is open, and never longer than
    /// `maximumLifetime` after it opened. After that it hashes nothing and says nothing (met;
    /// the submit checks again), so this oracle on the current password lives no longer than
    /// what gave it out (issue 52).
    struct Lifeline: Sendable {
        let until: Date
        let isOpen: @Sendable () -> Bool
        let now: @Sendable () -> Date

        static let maximumLifetime: TimeInterval = 15 * 60

        init(opened: Date, isOpen: @escaping @Sendable () -> Bool, now: @escaping @Sendable () -> Date) {
            until = opened.addingTimeInterval(Self.maximumLifetime)
            self.isOpen = isOpen
            self.now = now
        }

        var isOver: Bool { now() >= until || !isOpen() }
    }

    func state(of password: String) -> AnyPublisher<RequirementState, Never> {
        let hash = hash, hashing = hashing, client = client, lifeline = lifeline
        return Deferred {
            Future<RequirementState, Never> { promise in
                // A Future's promise may be called from any thread (it locks internally).
                nonisolated(unsafe) let promise = promise
                guard !lifeline.isOver else { return promise(.success(.met)) }
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
