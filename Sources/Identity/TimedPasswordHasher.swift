import Dispatch
import Metrics
import SignupDomain
import WebKernel

/// Records how long each hash and verification takes (`livesignup_password_hash_duration_seconds`),
/// the number that says whether the argon2 preset suits the host.
package struct TimedPasswordHasher: PasswordHashing {
    package let base: any PasswordHashing
    package let timer: Metrics.Timer
    /// Told of each hash and verification (the `hashing` limit's work).
    package var computed: (@Sendable () -> Void)?

    package init(base: any PasswordHashing, timer: Metrics.Timer, computed: (@Sendable () -> Void)?) {
        self.base = base
        self.timer = timer
        self.computed = computed
    }

    package func hash(_ password: String) throws -> String {
        computed?()
        let started = DispatchTime.now().uptimeNanoseconds
        defer { timer.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started)) }
        return try base.hash(password)
    }

    package func verify(_ password: String, against hash: String) -> Bool {
        computed?()
        let started = DispatchTime.now().uptimeNanoseconds
        defer { timer.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started)) }
        return base.verify(password, against: hash)
    }
}
