import Foundation
import ReactiveValidation

/// The rules of a field a policy declares (`text`, `checkbox`, `select`), made from its
/// declaration and a language's texts. Requirement ids are `<name>.required`,
/// `<name>.length`, `<name>.pattern` and `<name>.accepted`, in that order.
public enum DeclaredFieldRules {
    /// The longest value a declared text field takes, in code points after NFC, whatever its
    /// `max_length`: a profile is not a place for documents.
    public static let longestText = 1000

    /// The values a ticked checkbox may post: browsers send "on"; programs often "true" or "1".
    public static let tickedValues: Set<String> = ["on", "true", "1"]

    /// Why `pattern` does not compile, or nil when it does.
    static func patternProblem(_ pattern: String) -> String? {
        if (try? NSRegularExpression(pattern: pattern)) != nil {
            // It is used anchored inside a group (WholeMatch): a \Q without its \E, or a
            // comment in (?x) mode, runs on over the closing ")\z" and breaks the whole, and
            // the field's rule would be left out without a word (seen while writing the policy
            // file's fuzz target, whose property now holds it).
            return WholeMatch(pattern) == nil
                ? "it does not compile once anchored to the whole value; close every \\Q with \\E, and end a (?x) comment with a new line"
                : nil
        }
        // Foundation says only "the value is invalid"; Swift's own parser says where and why.
        do {
            _ = try Regex(pattern)
            return "ICU's regular expressions do not accept it"
        } catch {
            return "\(error)"
        }
    }

    /// A label's `[linked words]` split out, or nil when it has none.
    public static func linkedWords(in label: String) -> (before: String, link: String, after: String)? {
        guard let open = label.firstIndex(of: "["), let close = label[open...].firstIndex(of: "]"),
              label.index(after: open) < close else { return nil }
        return (String(label[..<open]), String(label[label.index(after: open)..<close]), String(label[label.index(after: close)...]))
    }

    /// The label as words, without the brackets that mark a link (for messages and lists).
    public static func plainLabel(_ label: String) -> String {
        guard let parts = linkedWords(in: label) else { return label }
        return parts.before + parts.link + parts.after
    }

    /// The placeholders a field's own text may use.
    static func placeholders(for key: String) -> Set<String> {
        switch key {
        case "required.message", "accepted.message", "pattern.message": return ["label"]
        case "length.text": return ["min", "max"]
        case "length.too_short": return ["label", "min"]
        case "length.too_long": return ["label", "max"]
        default: return []
        }
    }

    /// The field's rules in the language `language`, whose general texts are `texts`.
    static func rules(for declaration: FieldDeclaration, label: String, texts: PolicyTexts, language: String?) -> FieldRules<String> {
        let name = declaration.name
        let values = ["label": plainLabel(label)]
        /// The field's own text for `key`, else the general one.
        func say(_ key: String, _ general: PolicyText, _ extra: [String: String] = [:]) -> String {
            let filling = values.merging(extra) { $1 }
            if let own = declaration.text(key, language: language) { return PolicyTexts.fill(own, filling, language: texts.language) }
            return texts(general, filling)
        }
        let requiredMessage = say("required.message", .fieldRequiredMessage)
        var rules: [Rule<String>] = []
        var checks: [Check<String>] = []
        switch declaration.kind {
        case .text:
            let optional = !declaration.isRequired
            if declaration.isRequired {
                rules.append(Rule(id: "\(name).required", text: say("required.text", .fieldRequiredText),
                                  message: requiredMessage, isMet: { !isBlank($0) }))
            }
            if declaration.minimumLength != nil || declaration.maximumLength != nil {
                let minimum = declaration.minimumLength ?? 0
                let maximum = declaration.maximumLength ?? longestText
                let bounds = ["min": String(minimum), "max": String(maximum)]
                let text: String
                if let own = declaration.text("length.text", language: language) {
                    text = PolicyTexts.fill(own, bounds, language: texts.language)
                } else if declaration.minimumLength == nil {
                    text = texts(.fieldLengthMaximumText, bounds)
                } else if declaration.maximumLength == nil {
                    text = texts(.fieldLengthMinimumText, bounds)
                } else {
                    text = texts(.fieldLengthText, bounds)
                }
                let tooShort = say("length.too_short", .fieldLengthTooShort, bounds)
                let tooLong = say("length.too_long", .fieldLengthTooLong, bounds)
                rules.append(Rule(
                    id: "\(name).length", text: text,
                    message: { TextLength.codePoints($0) < minimum ? tooShort : tooLong },
                    // An optional field left empty has nothing too short about it.
                    isMet: { (optional && $0.isEmpty) || (minimum...maximum).contains(TextLength.codePoints($0)) }))
            }
            if let pattern = declaration.pattern, let matcher = WholeMatch(pattern) {
                rules.append(Rule(
                    id: "\(name).pattern", text: say("pattern.text", .fieldRequiredText),
                    message: say("pattern.message", .fieldRequiredMessage),
                    isMet: { (optional && $0.isEmpty) || matcher.matches($0.canonicallyComposed) }))
            }
            checks.append(Check(id: "\(name).control", message: texts(.fieldControlMessage, values),
                                isPassed: { !$0.unicodeScalars.contains { $0.properties.generalCategory == .control } }))
            if declaration.maximumLength == nil {
                let bound = ["max": String(longestText)]
                checks.append(Check(id: "\(name).longest", message: texts(.fieldLengthTooLong, values.merging(bound) { $1 }),
                                    isPassed: { TextLength.codePoints($0) <= longestText }))
            }
        case .checkbox:
            if declaration.mustBeAccepted {
                rules.append(Rule(id: "\(name).accepted", text: say("accepted.text", .fieldAcceptedText),
                                  message: say("accepted.message", .fieldAcceptedMessage),
                                  isMet: { tickedValues.contains($0) }))
            }
            return FieldRules(rules: rules, checks: checks,
                              emptyMessage: declaration.mustBeAccepted ? say("accepted.message", .fieldAcceptedMessage) : nil)
        case .select:
            if declaration.isRequired {
                rules.append(Rule(id: "\(name).required", text: say("required.text", .fieldRequiredText),
                                  message: requiredMessage, isMet: { !$0.isEmpty }))
            }
            let options = Set(declaration.options)
            checks.append(Check(id: "\(name).option", message: texts(.fieldOptionMessage, values),
                                isPassed: { $0.isEmpty || options.contains($0) }))
        case .username, .email, .password, .confirm:
            preconditionFailure("the built-in field '\(name)' has rules of its own")
        }
        return FieldRules(rules: rules, checks: checks, emptyMessage: declaration.isRequired ? requiredMessage : nil,
                          isEmpty: { isBlank($0) })
    }

    /// Empty, or nothing but spaces: a required text of spaces is still missing.
    static func isBlank(_ value: String) -> Bool {
        value.unicodeScalars.allSatisfy { $0.properties.isWhitespace }
    }

    /// What a declared field keeps in the account's profile for `value` (nothing for a field
    /// that is not stored, or a text left empty).
    public static func profileEntries(for declaration: FieldDeclaration, value: String, at date: Date) -> [String: ProfileValue] {
        guard declaration.isStored else { return [:] }
        switch declaration.kind {
        case .checkbox:
            let ticked = tickedValues.contains(value)
            var entries: [String: ProfileValue] = [declaration.name: .bool(ticked)]
            if ticked {
                entries["\(declaration.name)_accepted_at"] = .string(ProfileValue.timestamp(date))
                if let url = declaration.linkURL { entries["\(declaration.name)_url"] = .string(url) }
            }
            return entries
        case .text, .select:
            let text = value.canonicallyComposed
            return isBlank(text) ? [:] : [declaration.name: .string(text)]
        case .username, .email, .password, .confirm:
            return [:]
        }
    }
}

/// A regular expression that must match a whole value (anchored at both ends, so `a|ab`
/// does not pass "abc"); NSRegularExpression is immutable and safe to share between threads.
private final class WholeMatch: @unchecked Sendable {
    private let expression: NSRegularExpression

    init?(_ pattern: String) {
        guard let expression = try? NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z") else { return nil }
        self.expression = expression
    }

    func matches(_ value: String) -> Bool {
        expression.firstMatch(in: value, range: NSRange(value.startIndex..., in: value)) != nil
    }
}
