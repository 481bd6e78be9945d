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
    public var json: String {
        var json = JSONWriter()
        json.beginObject()
        json.key("applied"); json.bool(applied)
        json.key("rev"); json.int(rev)
        json.endObject()
        return json.text
    }
}
