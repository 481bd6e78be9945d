/// The answer to an edit (`POST /fields`): `{"applied":true,"rev":4}`.
public struct EditReceipt: Codable, Equatable, Sendable {
    /// The session's rev after this request: the edit's own number when applied, the current
    /// rev when it was ignored.
    public var rev: Int
    /// `false` when the server ignored the edit because its `seq` was not newer than the last
    /// applied one for the field.
    public var applied: Bool

    public init(rev: Int, applied: Bool) {
        self.rev = rev
        self.applied = applied
    }

    /// `{"applied":…,"rev":…}`, the same bytes as its `Codable` form, written directly: one
    /// is sent per edit.
    public var json: String { String(decoding: jsonBytes, as: UTF8.self) }

    /// `json` as the bytes a response sends, without a `String` in between. Written out: two
    /// fixed keys, a boolean and a number have nothing to escape, and a general writer cost
    /// more than the rest of the response.
    public var jsonBytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(40)
        bytes.append(contentsOf: (applied ? #"{"applied":true,"rev":"# : #"{"applied":false,"rev":"#).utf8)
        bytes.append(contentsOf: String(rev).utf8)
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}
