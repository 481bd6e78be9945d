import OutsideHTTP
import SignupDomain

extension BreachedPasswordChecker {
    /// Threads look-ups run on: as many as the range API lets wait at once.
    public static let lookupThreads = PwnedPasswordsRangeAPI.maxConcurrentLookups

    /// Threads a submitted form's look-up runs on, apart from the live ones.
    public static let submissionThreads = 2

    /// A checker whose look-ups run on threads of their own (a source may take its whole
    /// timeout, so never on Dispatch's shared pool or a request thread), submitted forms'
    /// on two more: a storm of typing against a slow source fills the live threads, and a
    /// sign-up must not wait behind it.
    public static func onWorkerThreads(lookup: any BreachedPasswordLookup,
                                       fallback: CommonPasswords = .builtIn) -> BreachedPasswordChecker {
        let threads = WorkerThreads(count: lookupThreads, name: "breached-passwords")
        let submissions = WorkerThreads(count: submissionThreads, name: "breached-passwords-submitted")
        return BreachedPasswordChecker(lookup: lookup, fallback: fallback, run: { threads.submit($0) },
                                       runSubmitted: { submissions.submit($0) })
    }
}
