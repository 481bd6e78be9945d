/// The state of one requirement (e.g. `password.length`): what rules compute and what the
/// wire carries. Raw values are the protocol's strings, so JSON maps them directly.
public enum RequirementState: String, Codable, Equatable, Hashable, Sendable, CaseIterable {
    case unmet
    case met
    /// Being checked asynchronously; the answer for the current value has not arrived yet.
    case pending
}
