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
/// API), on threads of its own (a look-up may wait out the source's timeout), for the view
/// model's debounced `switchToLatest` pipeline and for the submit check.
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
    /// Starts a look-up where it may block (a source may take its whole timeout, so not on
    /// Dispatch's shared pool); false when it cannot be taken now.
    private let run: @Sendable (@escaping @Sendable () -> Void) -> Bool
    /// The same for a submitted form's look-up: a lane of its own, so people typing (whose
    /// look-ups may each wait out a slow source) never hold up a sign-up.
    private let runSubmitted: @Sendable (@escaping @Sendable () -> Void) -> Bool
    private let lock = NSLock()
    private var remembered: [String: BreachVerdict] = [:]
    private var rememberedOrder: [String] = []
    private static let rememberedCapacity = 512
    private var counts = (lookups: 0, failures: 0)
    private var observer: (@Sendable (BreachVerdict, _ sourceFailure: BreachedPasswordError?) -> Void)?

    /// `run` starts a live look-up somewhere it may block (the app's worker threads:
    /// `SignupLookups`), or returns false to have it answered as a failed source at once;
    /// `runSubmitted` does the same for submitted forms (nil: the same lane as `run`). Tests
    /// pass queues they can drain.
    public init(lookup: any BreachedPasswordLookup, fallback: CommonPasswords = .builtIn,
                run: @escaping @Sendable (@escaping @Sendable () -> Void) -> Bool,
                runSubmitted: (@Sendable (@escaping @Sendable () -> Void) -> Bool)? = nil) {
        self.lookup = lookup
        self.fallback = fallback
        self.run = run
        self.runSubmitted = runSubmitted ?? run
    }

    /// Look-ups made (each a file search or an API request, or a cached API answer).
    public var lookupsMade: Int { lock.withLock { counts.lookups } }
    /// Look-ups the source could not answer, answered from the built-in list instead.
    public var sourceFailures: Int { lock.withLock { counts.failures } }

    /// Called after every look-up with its verdict and, if the source failed, why (metrics
    /// and warnings).
    public func observeLookups(_ observer: @escaping @Sendable (BreachVerdict, _ sourceFailure: BreachedPasswordError?) -> Void) {
        lock.withLock { self.observer = observer }
    }

    /// Looks the password up now, on the caller's thread.
    public func verdictNow(for password: String) -> BreachVerdict {
        let hash = BreachedPasswords.sha1(of: password)
        do {
            let times = try lookup.timesSeen(sha1: hash)
            return record(times > 0 ? .seen(times) : .notFound, hash: hash, failure: nil)
        } catch {
            return failOpen(password, hash: hash, error as? BreachedPasswordError ?? BreachedPasswordError("\(error)"))
        }
    }

    /// The answer when the source failed: breached only if the built-in list has it.
    private func failOpen(_ password: String, hash: String, _ failure: BreachedPasswordError) -> BreachVerdict {
        record(fallback.contains(password) ? .listedWhileSourceUnavailable : .notFound, hash: hash, failure: failure)
    }

    private func record(_ verdict: BreachVerdict, hash: String, failure: BreachedPasswordError?) -> BreachVerdict {
        let observer = lock.withLock { () -> (@Sendable (BreachVerdict, BreachedPasswordError?) -> Void)? in
            counts.lookups += 1
            if failure != nil { counts.failures += 1 }
            return self.observer
        }
        observer?(verdict, failure)
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

    /// Looks the password up on the checker's threads and hands the verdict to `completion`
    /// there (the submit check: never on a thread that serves requests). When too many
    /// look-ups are waiting already, it fails open at once, on the caller's thread.
    public func verdict(for password: String, then completion: @escaping @Sendable (BreachVerdict) -> Void) {
        verdict(for: password, on: run, then: completion)
    }

    /// The same for a submitted form, in the submissions' own lane.
    public func submittedVerdict(for password: String, then completion: @escaping @Sendable (BreachVerdict) -> Void) {
        verdict(for: password, on: runSubmitted, then: completion)
    }

    private func verdict(for password: String, on lane: @Sendable (@escaping @Sendable () -> Void) -> Bool,
                         then completion: @escaping @Sendable (BreachVerdict) -> Void) {
        guard lane({ [self] in completion(verdictNow(for: password)) }) else {
            let failure = BreachedPasswordError("too many look-ups are waiting for the source", reason: "busy")
            return completion(failOpen(password, hash: BreachedPasswords.sha1(of: password), failure))
        }
    }

    /// The requirement state for `password`, looked up on the checker's threads when subscribed.
    public func state(of password: String) -> AnyPublisher<RequirementState, Never> {
        let checker = self
        return Deferred {
            Future<RequirementState, Never> { promise in
                nonisolated(unsafe) let promise = promise
                checker.verdict(for: password) { promise(.success($0.state)) }
            }
        }
        .eraseToAnyPublisher()
    }
}
