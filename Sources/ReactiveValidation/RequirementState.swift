/// Where one requirement stands for the current input.
public enum RequirementState: String, Sendable, Hashable, Codable {
    case unmet
    case met
    /// Being checked asynchronously; the answer for the current value has not arrived yet.
    case pending
}
