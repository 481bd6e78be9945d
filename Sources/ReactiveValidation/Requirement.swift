/// What a requirement is, independent of how it is checked: the data a page, an event
/// stream and a test all share.
public struct Requirement: Sendable, Hashable, Identifiable {
    /// Stable identifier, part of public protocols (e.g. "password.length").
    public let id: String
    /// The checklist line, e.g. "At least 8 characters".
    public let text: String

    public init(id: String, text: String) {
        self.id = id
        self.text = text
    }
}
