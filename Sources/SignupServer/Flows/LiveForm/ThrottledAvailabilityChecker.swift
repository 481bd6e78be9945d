import Clocks
import Dispatch
import Foundation
import Identity
import Metrics
import ReactiveValidation
import SignupDomain
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
import WebKernel
#endif

/// One form's "is this username free?" look-ups, paced by its own budget and its address's.
/// Over budget a look-up waits its turn (the checklist shows "checking" meanwhile) instead
/// of failing, so a person never sees an error and a script enumerating names gets answers
/// no faster than the limits allow. A wait longer than the limit's maximum is not made.
struct ThrottledAvailabilityChecker: UsernameAvailabilityChecking {
    let base: StoreAvailabilityChecker
    let limiters: ClientLimiters
    let sessionKey: String
    let addressKey: String
    /// Counts the look-ups actually made.
    let checks: Counter
    /// Runs a look-up after its wait (the app's clock; tests drive it).
    let clock: any WallClock

    func availability(of username: String) -> AnyPublisher<RequirementState, Never> {
        let checker = self
        return Deferred {
            Future<RequirementState, Never> { promise in
                // A Future's promise may be called from any thread (it locks internally).
                nonisolated(unsafe) let promise = promise
                guard let wait = checker.reserveLookup() else {
                    promise(.success(.pending))
                    return
                }
                checker.clock.after(wait) {
                    checker.checks.increment()
                    promise(.success((try? checker.base.availabilityNow(of: username)) ?? .pending))
                }
            }
        }
        .eraseToAnyPublisher()
    }

    /// The delay before a look-up may run, with both budgets spent; nil if either would
    /// make it wait too long (then nothing is spent).
    func reserveLookup() -> Double? {
        let maximum = limiters.limits.maximumLookupDelay
        guard let sessionWait = limiters.lookupsPerSession.reserve(sessionKey, maximumWait: maximum) else { return nil }
        guard let addressWait = limiters.lookupsPerAddress.reserve(addressKey, maximumWait: maximum) else {
            limiters.lookupsPerSession.refund(sessionKey)
            return nil
        }
        return max(sessionWait, addressWait)
    }
}
