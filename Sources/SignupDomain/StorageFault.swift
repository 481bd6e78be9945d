/// The database the server is configured with cannot be trusted with a write right now:
/// its file was deleted, replaced or cannot be written. Nothing is acknowledged meanwhile.
public struct StorageFault: Error, CustomStringConvertible, Equatable {
    public let reason: String

    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
