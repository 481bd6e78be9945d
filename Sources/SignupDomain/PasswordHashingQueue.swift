import Dispatch
import Foundation

/// Runs password hashing and verification off the caller's thread (an argon2id hash takes
/// tens of milliseconds and tens of MiB), with at most `maximumConcurrentJobs` running at once
/// so a burst of sign-ups queues up instead of exhausting memory (each job holds
/// `memLimitBytes` while it runs).
public final class PasswordHashingQueue: Sendable {
    public let maximumConcurrentJobs: Int
    private let hasher: any PasswordHashing
    /// Where jobs run, up to the bound at a time.
    private let workers: DispatchQueue
    /// Serial, so jobs waiting for a slot wait in order on one blocked thread rather than each
    /// parking a worker thread of their own (which would grow the thread pool under a burst).
    private let admission: DispatchQueue
    /// One permit per job allowed to run; taken by the admission work item, returned by the job.
    private let slots: DispatchSemaphore

    public init(hasher: any PasswordHashing,
                maximumConcurrentJobs: Int = ProcessInfo.processInfo.activeProcessorCount) {
        // Zero permits would never run anything; negative ones crash DispatchSemaphore.
        precondition(maximumConcurrentJobs > 0, "maximumConcurrentJobs must be at least 1")
        self.hasher = hasher
        self.maximumConcurrentJobs = maximumConcurrentJobs
        self.workers = DispatchQueue(label: "password-hashing.workers", attributes: .concurrent)
        self.admission = DispatchQueue(label: "password-hashing.admission")
        self.slots = DispatchSemaphore(value: maximumConcurrentJobs)
    }

    /// Hashes `password` in the background; `completion` runs on a background thread.
    public func hash(_ password: String, completion: @escaping @Sendable (Result<String, Error>) -> Void) {
        let hasher = self.hasher
        run({ Result { try hasher.hash(password) } }, then: completion)
    }

    /// Verifies `password` against `hash` in the background; `completion` runs on a background thread.
    public func verify(_ password: String, against hash: String, completion: @escaping @Sendable (Bool) -> Void) {
        let hasher = self.hasher
        run({ hasher.verify(password, against: hash) }, then: completion)
    }

    private func run<Output>(_ job: @escaping @Sendable () -> Output,
                             then completion: @escaping @Sendable (Output) -> Void) {
        let workers = self.workers
        let slots = self.slots
        admission.async {
            slots.wait()  // blocks only the admission thread, never the caller
            workers.async {
                let output = job()
                // Free the slot before calling back so a slow completion does not hold it.
                slots.signal()
                completion(output)
            }
        }
    }
}
