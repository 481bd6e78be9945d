/// An immutable value behind one reference. Why: evaluations and password candidates travel
/// through generic code (OpenCombine's operators, the rules' `FieldEvaluation`, the caches'
/// keys) that copies and destroys them through value witnesses, and a struct of arrays,
/// dictionaries and strings retained and released each of them per copy (issue 24); behind
/// one reference a copy is one retain. Nothing mutates the value, so sharing it is safe.
///
/// Equal when it is the same reference (nothing to compare, the usual case for a value
/// handed on from a cache), else when the values are equal.
struct SharedValue<Value: Equatable & Sendable>: Equatable, Sendable {
    private final class Box: Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private let box: Box

    init(_ value: Value) {
        box = Box(value)
    }

    var value: Value { box.value }

    static func == (lhs: SharedValue, rhs: SharedValue) -> Bool {
        lhs.box === rhs.box || lhs.box.value == rhs.box.value
    }
}
