import Foundation

/// A value guarded by a lock: the one lock box of every module (the server's, the client
/// library's, the OpenID relying party's and the tests'). Used instead of `Mutex` because the
/// package still supports macOS 13, where Synchronization's is unavailable, and because the
/// guarded state may hold C pointers, Dispatch or URLSession objects, which are not `Sendable`
/// but are only touched under the lock. The lock is not recursive: never call out to foreign
/// code (URLSession, a stream's continuation, a callback) inside `body`, which may re-enter it.
public final class Locked<Value>: @unchecked Sendable {
    /// Only ever reached inside `lock`, which is its exclusivity (a `body` that called
    /// `withLock` again would deadlock first): no runtime check per access.
    @exclusivity(unchecked) private var value: Value
    private let lock = NSLock()

    public init(_ value: Value) {
        self.value = value
    }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
