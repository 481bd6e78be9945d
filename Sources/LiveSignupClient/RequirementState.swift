/// The state of one requirement (e.g. `password.length`) as the server reports it. Raw values
/// are the protocol's wire strings, so JSON decoding maps them directly.
public enum RequirementState: String, Codable, Equatable, Hashable, Sendable, CaseIterable {
    case unmet
    case met
    /// Waiting for an asynchronous answer (the username availability lookup).
    case pending
}
