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
    /// `isEligible` is exactly "the field's own rules and checks all pass" (a rule made by
    /// `FieldRules.asyncRule`): an evaluation that has just judged them uses that verdict
    /// instead of judging the value twice (the username's twice was an ICU spoof check too).
    public let isEligibleWhenFieldPasses: Bool

    public init(
        id: String,
        text: String,
        isEligible: @escaping @Sendable (Value) -> Bool,
        check: @escaping @Sendable (Value) -> AnyPublisher<RequirementState, Never>
    ) {
        self.init(requirement: Requirement(id: id, text: text), isEligible: isEligible, check: check,
                  isEligibleWhenFieldPasses: false)
    }

    init(requirement: Requirement, isEligible: @escaping @Sendable (Value) -> Bool,
         check: @escaping @Sendable (Value) -> AnyPublisher<RequirementState, Never>, isEligibleWhenFieldPasses: Bool) {
        self.requirement = requirement
        self.isEligible = isEligible
        self.check = check
        self.isEligibleWhenFieldPasses = isEligibleWhenFieldPasses
    }

    public var id: String { requirement.id }
}
