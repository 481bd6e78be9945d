#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// A rule answered asynchronously, e.g. "this username is not taken" (a database look-up).
public struct AsyncRule<Value>: Sendable {
    public let requirement: Requirement
    /// Whether a value is worth checking at all; values that are not stay `unmet` unchecked.
    public let isEligible: @Sendable (Value) -> Bool
    /// Answers `met` or `unmet` for a value (or `pending` if it could not tell).
    public let check: @Sendable (Value) -> AnyPublisher<RequirementState, Never>

    public init(
        id: String,
        text: String,
        isEligible: @escaping @Sendable (Value) -> Bool,
        check: @escaping @Sendable (Value) -> AnyPublisher<RequirementState, Never>
    ) {
        self.requirement = Requirement(id: id, text: text)
        self.isEligible = isEligible
        self.check = check
    }

    public var id: String { requirement.id }
}
