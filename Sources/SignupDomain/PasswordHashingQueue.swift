import Dispatch
import Foundation

/// Runs password hashing (sign-ups) and verification (sign-ins) off the caller's thread: an
/// argon2id hash takes tens of milliseconds and tens of MiB, so at most
/// `maximumConcurrentJobs` run at once and the rest wait.
///
/// Waiting is fair, so a flood of guesses cannot starve sign-ups:
/// - sign-ups and sign-ins wait in separate lanes, and a free slot alternates between them
///   while both have work, so sign-ups keep at least half the hashing capacity;
/// - one client (an address) may have at most `maximumJobsPerClient` jobs queued or running;
///   beyond that it is refused at once (`HashingRefusal.clientBusy`), costing nothing;
/// - each lane holds at most `maximumQueuedPerLane` jobs (`HashingRefusal.queueFull`).
public final class PasswordHashingQueue: @unchecked Sendable {
    public enum Lane: Sendable { case signUp, signIn }

    public let maximumConcurrentJobs: Int
    public let maximumJobsPerClient: Int
    public let maximumQueuedPerLane: Int
    private let hasher: any PasswordHashing
    /// Where jobs run, up to the bound at a time.
    private let workers = DispatchQueue(label: "password-hashing.workers", attributes: .concurrent)

    private struct Job {
        let client: String?
        /// Does the work and returns the delivery of its result, which runs after the slot is
        /// freed so a slow completion (a database write) does not hold it.
        let run: @Sendable () -> @Sendable () -> Void
        let cancel: @Sendable () -> Void
    }

    private let lock = NSLock()
    // Guarded by `lock`.
    private var signUps: [Job] = []
    private var signIns: [Job] = []
    private var running = 0
    private var jobsByClient: [String: Int] = [:]
    private var preferSignIn = false
    private var isShutDown = false

    public init(hasher: any PasswordHashing,
                maximumConcurrentJobs: Int = ProcessInfo.processInfo.activeProcessorCount,
                maximumJobsPerClient: Int = 2,
                maximumQueuedPerLane: Int = 256) {
        // Zero slots would never run anything.
        precondition(maximumConcurrentJobs > 0, "maximumConcurrentJobs must be at least 1")
        precondition(maximumJobsPerClient > 0, "maximumJobsPerClient must be at least 1")
        self.hasher = hasher
        self.maximumConcurrentJobs = maximumConcurrentJobs
        self.maximumJobsPerClient = maximumJobsPerClient
        self.maximumQueuedPerLane = maximumQueuedPerLane
    }

    /// Hashes `password` (a sign-up) in the background; `completion` runs on a background
    /// thread, with `HashingRefusal.shuttingDown` if the job was cancelled before it started.
    public func hash(_ password: String, client: String? = nil,
                     completion: @escaping @Sendable (Result<String, Error>) -> Void) throws(HashingRefusal) {
        let hasher = self.hasher
        try submit(Job(client: client,
                       run: {
                           let result = Result { try hasher.hash(password) }
                           return { completion(result) }
                       },
                       cancel: { completion(.failure(HashingRefusal.shuttingDown)) }),
                   lane: .signUp)
    }

    /// Verifies `password` against `hash` (a sign-in) in the background; `completion` runs on
    /// a background thread, with `.shuttingDown` if the job was cancelled before it started.
    public func verify(_ password: String, against hash: String, client: String? = nil,
                       completion: @escaping @Sendable (Result<Bool, HashingRefusal>) -> Void) throws(HashingRefusal) {
        let hasher = self.hasher
        try submit(Job(client: client,
                       run: {
                           let matches = hasher.verify(password, against: hash)
                           return { completion(.success(matches)) }
                       },
                       cancel: { completion(.failure(.shuttingDown)) }),
                   lane: .signIn)
    }

    /// Cancels every job not yet started (their completions get `.shuttingDown`) and refuses
    /// new ones; jobs already running finish.
    public func shutDown() {
        let cancelled = lock.withLock { () -> [Job] in
            isShutDown = true
            defer { signUps = []; signIns = [] }
            return signUps + signIns
        }
        for job in cancelled {
            lock.withLock { release(job.client) }
            job.cancel()
        }
    }

    /// Jobs waiting for a slot.
    public var queuedJobs: Int { lock.withLock { signUps.count + signIns.count } }
    /// Jobs running now.
    public var runningJobs: Int { lock.withLock { running } }

    private func submit(_ job: Job, lane: Lane) throws(HashingRefusal) {
        if let refusal = lock.withLock({ enqueue(job, lane: lane) }) { throw refusal }
        startJobs()
    }

    // Called with `lock` held.
    private func enqueue(_ job: Job, lane: Lane) -> HashingRefusal? {
        guard !isShutDown else { return .shuttingDown }
        if let client = job.client, jobsByClient[client, default: 0] >= maximumJobsPerClient {
            return .clientBusy
        }
        switch lane {
        case .signUp:
            guard signUps.count < maximumQueuedPerLane else { return .queueFull }
            signUps.append(job)
        case .signIn:
            guard signIns.count < maximumQueuedPerLane else { return .queueFull }
            signIns.append(job)
        }
        if let client = job.client { jobsByClient[client, default: 0] += 1 }
        return nil
    }

    /// Fills free slots, alternating lanes while both have work.
    private func startJobs() {
        while let job = lock.withLock({ nextJob() }) {
            workers.async { [self] in
                let deliver = job.run()
                lock.withLock {
                    running -= 1
                    release(job.client)
                }
                startJobs()
                deliver()
            }
        }
    }

    // Called with `lock` held.
    private func nextJob() -> Job? {
        guard running < maximumConcurrentJobs, !(signUps.isEmpty && signIns.isEmpty) else { return nil }
        let takeSignIn = signUps.isEmpty || (!signIns.isEmpty && preferSignIn)
        preferSignIn = !takeSignIn
        running += 1
        return takeSignIn ? signIns.removeFirst() : signUps.removeFirst()
    }

    // Called with `lock` held.
    private func release(_ client: String?) {
        guard let client, let count = jobsByClient[client] else { return }
        jobsByClient[client] = count > 1 ? count - 1 : nil
    }
}
