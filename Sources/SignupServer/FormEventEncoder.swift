import Foundation
import ReactiveValidation
import SignupDomain

/// Turns form events into the one-line JSON `data:` payloads of the protocol.
enum FormEventEncoder {
    private struct SnapshotPayload: Encodable {
        let rev: Int
        let requirements: [String: RequirementState]
        let messages: [String: String]
        let strength: StrengthPayload
        let submit: SubmitPayload
    }

    private struct StrengthPayload: Encodable {
        let score: Int
        let label: String
        let warning: String
        let suggestions: [String]
        var rev: Int?

        init(_ strength: PasswordStrength, rev: Int? = nil) {
            score = strength.score
            label = strength.label
            warning = strength.warning
            suggestions = strength.suggestions
            self.rev = rev
        }
    }

    private struct SubmitPayload: Encodable {
        let enabled: Bool
        var rev: Int?
    }

    private struct RequirementPayload: Encodable {
        let id: String
        let state: RequirementState
        let rev: Int
    }

    private struct MessagePayload: Encodable {
        let field: String
        let text: String
        let rev: Int
    }

    static func data(for event: FormEvent, rev: Int) -> String {
        switch event {
        case .snapshot(let outputs):
            return json(SnapshotPayload(
                rev: rev,
                requirements: outputs.requirements,
                messages: Dictionary(uniqueKeysWithValues: SignupField.allCases.map {
                    ($0.rawValue, outputs.messages[$0] ?? "")
                }),
                strength: StrengthPayload(outputs.strength),
                submit: SubmitPayload(enabled: outputs.isSubmitEnabled)))
        case .requirement(let id, let state):
            return json(RequirementPayload(id: id, state: state, rev: rev))
        case .message(let field, let text):
            return json(MessagePayload(field: field.rawValue, text: text, rev: rev))
        case .strength(let strength):
            return json(StrengthPayload(strength, rev: rev))
        case .submit(let enabled):
            return json(SubmitPayload(enabled: enabled, rev: rev))
        }
    }

    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these plain structs cannot fail.
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
