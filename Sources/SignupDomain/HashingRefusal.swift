/// Why `PasswordHashingQueue` did not take (or did not finish) a job.
public enum HashingRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// This client already has as many jobs queued or running as it may.
    case clientBusy
    /// The queue for this kind of job is full.
    case queueFull
    /// The queue is shutting down: queued jobs are cancelled, new ones refused.
    case shuttingDown

    public var description: String {
        switch self {
        case .clientBusy: return "this client already has password checks waiting"
        case .queueFull: return "too many password checks are waiting"
        case .shuttingDown: return "the server is shutting down"
        }
    }
}
