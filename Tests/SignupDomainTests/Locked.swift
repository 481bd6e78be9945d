import Foundation

/// A value the tests' callbacks set from other threads, behind a lock (one for the module's
/// tests; the server's own `MicroHTTPD.Locked` is a layer this module does not import).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result { lock.withLock { body(&value) } }
}
