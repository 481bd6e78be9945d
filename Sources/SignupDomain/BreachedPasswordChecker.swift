import Dispatch
import Foundation
import ReactiveValidation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// What is known of a password's breaches.
public enum BreachVerdict: Equatable, Sendable {
    case notFound
    /// Seen this many times in the breach corpus.
    case seen(Int)
    /// The source could not answer, and the built-in common-password list has it.
    case listedWhileSourceUnavailable

    public var state: RequirementState { self == .notFound ? .met : .unmet }
}

/// Answers `password.breached` from a breach source (a Pwned Passwords file or the range
/// API), on its own queue, for the view model's debounced `switchToLatest` pipeline, and
/// synchronously for the submit check.
///
/// Fails open: when the source cannot answer (the API is down or slow), a password counts as
/// breached only if the built-in common-password list has it, so an outage never blocks
/// sign-ups. `sourceFailures` counts those answers for the operator.
///
/// Verdicts are remembered by SHA-1 (a few hundred, the newest), so the message can say how
/// many times a password was seen without looking it up again.
public final class BreachedPasswordChecker: @unchecked Sendable {
    public let lookup: any BreachedPasswordLookup
    private let fallback: CommonPasswords
    private let queue: DispatchQueue
    private let lock = NSLock()
    private var remembered: [String: BreachVerdict] = [:]
    private var rememberedOrder: [String] = []
    private static let rememberedCapacity = 512
    private var counts = (lookups: 0, failures: 0)
    private var observer: (@Sendable (BreachVerdict, _ sourceFailed: Bool) -> Void)?

    public init(lookup: any BreachedPasswordLookup, fallback: CommonPasswords = .builtIn,
                queue: DispatchQueue = DispatchQueue(label: "breached-passwords", attributes: .concurrent)) {
        self.lookup = lookup
        self.fallback = fallback
        self.queue = queue
    }

    /// Look-ups made (each a file search or an API request, or a cached API answer).
    public var lookupsMade: Int { lock.withLock { counts.lookups } }
    /// Look-ups the source could not answer, answered from the built-in list instead.
    public var sourceFailures: Int { lock.withLock { counts.failures } }

    /// Called after every look-up with its verdict and whether the source failed (metrics).
    public func observeLookups(_ observer: @escaping @Sendable (BreachVerdict, _ sourceFailed: Bool) -> Void) {
        lock.withLock { self.observer = observer }
    }

    /// Looks the password up now, on the caller's thread.
    public func verdictNow(for password: String) -> BreachVerdict {
        let hash = BreachedPasswords.sha1(of: password)
        let verdict: BreachVerdict
        let failed: Bool
        do {
            let times = try lookup.timesSeen(sha1: hash)
            verdict = times > 0 ? .seen(times) : .notFound
            failed = false
        } catch {
            verdict = fallback.contains(password) ? .listedWhileSourceUnavailable : .notFound
            failed = true
        }
        let observer = lock.withLock { () -> (@Sendable (BreachVerdict, Bool) -> Void)? in
            counts.lookups += 1
            if failed { counts.failures += 1 }
            return self.observer
        }
        observer?(verdict, failed)
        lock.withLock {
            if remembered.updateValue(verdict, forKey: hash) == nil { rememberedOrder.append(hash) }
            if rememberedOrder.count > Self.rememberedCapacity { remembered[rememberedOrder.removeFirst()] = nil }
        }
        return verdict
    }

    /// The verdict of the latest look-up of this password, if it is still remembered.
    public func rememberedVerdict(for password: String) -> BreachVerdict? {
        let hash = BreachedPasswords.sha1(of: password)
        return lock.withLock { remembered[hash] }
    }

    /// The requirement state for `password`, looked up on the checker's queue when subscribed.
    public func state(of password: String) -> AnyPublisher<RequirementState, Never> {
        let checker = self
        return Deferred {
            Future<RequirementState, Never> { promise in
                nonisolated(unsafe) let promise = promise
                checker.queue.async { promise(.success(checker.verdictNow(for: password).state)) }
            }
        }
        .eraseToAnyPublisher()
    }
}
