import Foundation

/// A value only reachable through an `NSLock`.
///
/// `@unchecked Sendable` is sound here because every read and write of `value` happens inside
/// `withLock`. `Mutex` from Synchronization would say the same thing to the compiler, but the
/// package still supports macOS 13 where it is unavailable, and the guarded state includes
/// URLSession objects that are not `Sendable` themselves.
final class LockedState<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access. Never call out to foreign code (URLSession, stream
    /// continuations) inside `body`: it may re-enter and deadlock the non-recursive lock.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
