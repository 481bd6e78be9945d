import ReactiveValidation

/// A declared field as one language shows it: its declaration, its words in that language,
/// and (for the fields a policy adds) its rules. `FormPolicy.fields` holds them in page order.
public struct FormField: Sendable {
    public let declaration: FieldDeclaration
    /// The label, nil for a built-in field the policy does not relabel (the page then uses
    /// its catalog's `field.<name>.label`). A link's words are in [brackets].
    public let label: String?
    /// One sentence under the label, if the policy gives one.
    public let hint: String?
    /// A select's options, as (value, label), in the declared order.
    public let options: [(value: String, label: String)]
    /// The rules of a field the policy declares; nil for the built-in four, whose rules are
    /// typed (`FormPolicy.username`, `.email`, `.password`, `.confirm`).
    public let rules: FieldRules<String>?

    public var field: SignupField { declaration.field }
    public var kind: FieldDeclaration.Kind { declaration.kind }

    init(_ declaration: FieldDeclaration, texts: PolicyTexts, language: String?) {
        self.declaration = declaration
        let label = declaration.text("label", language: language)
        self.label = label
        hint = declaration.text("hint", language: language)
        options = declaration.options.map { ($0, declaration.text("option.\($0)", language: language) ?? $0) }
        rules = declaration.kind.isBuiltIn ? nil
            : DeclaredFieldRules.rules(for: declaration, label: label ?? declaration.name, texts: texts, language: language)
    }
}
