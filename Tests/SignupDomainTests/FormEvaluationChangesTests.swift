import Foundation
import ReactiveValidation
import SignupWire
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif
@testable import SignupDomain
import XCTest

/// A session tells its streams what changed by diffing two evaluations' arrays
/// (`FormEvaluation.changes(since:rev:policy:)`). The protocol's definition of "what changed"
/// is the diff of the two snapshots (`SignupSnapshot.changes`): over random walks through
/// values, visibility, availability answers and credential switches, the two give the same
/// events in the same order.
final class FormEvaluationChangesTests: XCTestCase {
    private static let declared = """
        fields:
          - name: username
          - name: email
          - name: badge
            kind: text
            label: Badge number
            required: true
            min_length: 4
            pattern: "[A-Z]{2}-[0-9]+"
            texts:
              pattern.text: Like AB-12
              pattern.message: "{label} looks like AB-12"
          - name: password
          - name: confirm
          - name: terms
            kind: checkbox
            label: I accept the terms
            accepted: true
        """

    private func policies() throws -> [FormPolicy] {
        let declared = try PolicyFile.parse(Self.declared, file: "policy.yaml", baseDirectory: URL(fileURLWithPath: "/"))
        return Policy.all.map { FormPolicy($0) } + [FormPolicy(declared)]
    }

    /// Values that meet and miss each kind of rule.
    private let pools: [SignupField: [String]] = [
        .username: ["", "a", "ada", "ada_lovelace", "admin", "Ada Lovelace"],
        .email: ["", "ada", "ada@example.com", "ada@gmial.com", "ada@x"],
        .password: ["", "a", "password", "Abcdefgh-472", "correct horse battery staple", "ADA_lovelace_1815"],
        .confirm: ["", "Abcdefgh-472", "correct horse battery staple"],
        SignupField(rawValue: "badge"): ["", "AB", "AB-12", "ab-12"],
        SignupField(rawValue: "terms"): ["", "on"],
    ]

    func testTheArrayDiffIsTheSnapshotDiff() throws {
        var generator = SeededGenerator(seed: 24)
        for policy in try policies() {
            let availability = policy.usernameAvailabilityRule { _ in Empty().eraseToAnyPublisher() }
            var values = policy.fieldOrder.map { _ in "" }
            var shown: Set<SignupField> = []
            var credential = CredentialChoice.password
            var answer: AsyncAnswer<String>?
            var history = [policy.initialEvaluation]
            var checked = 0
            for step in 1...400 {
                switch Int.random(in: 0..<10, using: &generator) {
                case 0..<6:
                    let position = Int.random(in: 0..<values.count, using: &generator)
                    values[position] = pools[policy.fieldOrder[position]]?.randomElement(using: &generator) ?? ""
                case 6:
                    shown = Set(policy.everyField.filter { _ in Bool.random(using: &generator) })
                case 7:
                    credential = CredentialChoice(method: Bool.random(using: &generator) ? .passkey : .password,
                                                  passkeyCreated: Bool.random(using: &generator))
                default:
                    let username = values[policy.fieldOrder.firstIndex(of: .username) ?? 0]
                    answer = [nil, AsyncAnswer(value: username, state: .met),
                              AsyncAnswer(value: username, state: .unmet)].randomElement(using: &generator)!
                }
                let current = policy.evaluate(inPageOrder: values, availability: availability, answer: answer,
                                              shownFields: shown, credential: credential)
                // Equality is by value, not by the shared parts: the same inputs evaluated
                // again (new parts) are equal, which `removeDuplicates` relies on.
                XCTAssertEqual(current, policy.evaluate(inPageOrder: values, availability: availability, answer: answer,
                                                        shownFields: shown, credential: credential),
                               "\(policy.name), step \(step)")
                // The last evaluation (what a stream was told) and one from further back.
                let earlier = [history[history.count - 1], history.randomElement(using: &generator)!]
                for previous in earlier {
                    let expected = current.snapshot(rev: step).changes(
                        since: previous.snapshot(rev: step), requirementOrder: policy.liveRequirementOrder,
                        fieldOrder: policy.liveFieldOrder.map(\.rawValue))
                    XCTAssertEqual(current.changes(since: previous, rev: step, policy: policy), expected,
                                   "\(policy.name), step \(step): \(values), shown \(shown), \(credential)")
                    if !expected.isEmpty {
                        checked += 1
                        // What a stream would be told differs, so `removeDuplicates` must let
                        // the new evaluation through.
                        XCTAssertNotEqual(current, previous, "\(policy.name), step \(step)")
                    }
                }
                history.append(current)
            }
            // A walk that changed nothing would prove nothing.
            XCTAssertGreaterThan(checked, 300, policy.name)
        }
    }

    func testNothingChangedIsNoEvent() throws {
        for policy in try policies() {
            let evaluation = policy.initialEvaluation
            XCTAssertEqual(evaluation.changes(since: evaluation, rev: 1, policy: policy), [], policy.name)
        }
    }
}

/// A small deterministic generator (SplitMix64), so a failure repeats.
private struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49EB_1331_11EB
        return z ^ (z >> 31)
    }
}
