import Foundation

/// A value guarded by a lock. Used instead of `Mutex` where the guarded state holds C
/// pointers or Dispatch objects, which are not `Sendable` but are only touched under the lock.
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
