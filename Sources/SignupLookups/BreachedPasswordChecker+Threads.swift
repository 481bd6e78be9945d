import OutsideHTTP
import SignupDomain

extension BreachedPasswordChecker {
    /// Threads look-ups run on: as many as the range API lets wait at once.
    public static let lookupThreads = PwnedPasswordsRangeAPI.maxConcurrentLookups

    /// A checker whose look-ups run on threads of their own (a source may take its whole
    /// timeout, so never on Dispatch's shared pool or a request thread).
    public static func onWorkerThreads(lookup: any BreachedPasswordLookup,
                                       fallback: CommonPasswords = .builtIn) -> BreachedPasswordChecker {
        let threads = WorkerThreads(count: lookupThreads, name: "breached-passwords")
        return BreachedPasswordChecker(lookup: lookup, fallback: fallback, run: { threads.submit($0) })
    }
}
