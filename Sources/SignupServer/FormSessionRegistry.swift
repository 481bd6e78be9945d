import Foundation
import SignupDomain

/// All live form sessions by token. Sessions nobody has used for `idleLifetime` and that
/// have no open stream expire; their token then answers 404.
final class FormSessionRegistry: @unchecked Sendable {
    struct Settings {
        var policy: SignupPolicy
        var availabilityChecker: any UsernameAvailabilityChecking
        var availabilityDebounce: DispatchQueue.SchedulerTimeType.Stride
        var idleLifetime: TimeInterval
        var maximumSessions: Int
        var now: @Sendable () -> Date
    }

    enum CreateError: Error {
        case full
    }

    private let settings: Settings
    private let lock = NSLock()
    private var sessions: [String: FormSession] = [:]

    init(settings: Settings) {
        self.settings = settings
    }

    var count: Int { lock.withLock { sessions.count } }

    func create() throws(CreateError) -> FormSession {
        if count >= settings.maximumSessions {
            removeExpired()
            if count >= settings.maximumSessions { throw .full }
        }
        let session = FormSession(
            token: Self.makeToken(),
            policy: settings.policy,
            availabilityChecker: settings.availabilityChecker,
            availabilityDebounce: settings.availabilityDebounce,
            now: settings.now)
        lock.withLock { sessions[session.token] = session }
        return session
    }

    /// The live session with that token. An expired one is removed here rather than waiting
    /// for the next sweep, so expiry is exact.
    func session(for token: String) -> FormSession? {
        guard let session = lock.withLock({ sessions[token] }) else { return nil }
        guard isExpired(session, cutoff: expiryCutoff) else { return session }
        lock.withLock { sessions[token] = nil }
        return nil
    }

    private var expiryCutoff: Date {
        settings.now().addingTimeInterval(-settings.idleLifetime)
    }

    private func isExpired(_ session: FormSession, cutoff: Date) -> Bool {
        !session.hasOpenStreams && session.lastActivity < cutoff
    }

    /// Drops sessions idle for longer than their lifetime; returns how many.
    @discardableResult
    func removeExpired() -> Int {
        let cutoff = expiryCutoff
        let candidates = lock.withLock { Array(sessions.values) }
        let expired = candidates.filter { isExpired($0, cutoff: cutoff) }
        lock.withLock {
            for session in expired { sessions[session.token] = nil }
        }
        return expired.count
    }

    func closeAllStreams() {
        let all = lock.withLock { Array(sessions.values) }
        for session in all { session.closeStreams() }
    }

    /// 128 bits from the system's cryptographic RNG, as 32 lowercase hex digits.
    static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let words = (generator.next() as UInt64, generator.next() as UInt64)
        return hex(words.0) + hex(words.1)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
