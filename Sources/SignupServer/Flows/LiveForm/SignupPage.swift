import Foundation
import Identity
import ReactiveValidation
import SignupDomain
import WebKernel

/// What the sign-up page shows for a form: values (never passwords), checklist states,
/// messages, strength.
struct SignupPage {
    var token: String
    var values: [SignupField: String]
    var requirementStates: [String: RequirementState]
    var messages: [SignupField: String]
    var strength: PasswordStrength
    /// Problems listed in the error summary after a failed submit, in field order.
    var errors: [(field: SignupField, message: String)] = []
    /// A problem with the form as a whole (expired or already used), shown in the summary.
    var formError: String = ""
    /// Where to go after signing up (a validated `return_to`), carried in a hidden field
    /// and on the link to the sign-in form.
    var returnTo: String = ""
    /// The sign-in link's query, when not the one `returnTo` and the language make.
    var signInQuery: String?
    /// "Did you mean …?" corrections by field (after a failed submit).
    var suggestions: [SignupField: String] = [:]
    /// The form's proof-of-work challenge as JSON, "" when proofs are off.
    var challenge: String = ""
    /// Password or passkey, as the person chose on this form.
    var credential = CredentialMethod.password
    /// A passkey was made on this form (its session holds it).
    var passkeyCreated = false
    /// A sign-up, or a form about one account (a new password, a new address).
    var purpose = Purpose.signup
    /// The provider's name when the person is signing up through one (issue 45): the
    /// password fields give way to "Signed in with <provider>".
    var provider: String?
    /// The form's rules: the language's sign-up rules unless given (a new-password form's
    /// are its account's, `FormPolicy.newPassword(for:)`).
    var policy: FormPolicy?

    enum Purpose: Equatable {
        case signup
        /// Some of the sign-up form's fields (the password fields, or the address), for one account.
        case accountForm(AccountForm)
    }

    /// A form about one existing account, the sign-up form's machinery with some of its
    /// fields: a recovery's new password (`/recover/password`), a change of password
    /// (`/account/password`) or of address (`/account/email`); its words and where it posts.
    struct AccountForm: Equatable {
        var username: String
        /// Where it posts.
        var action: String
        /// Where the page's script asks for a fresh live session (`data-session-url`).
        var sessionURL: String
        /// The catalog keys of its title, lead ({username}) and button.
        var title: String
        var lead: String
        var submit: String
        /// A change asks for the current password too (an account that has one).
        var asksCurrentPassword = false
        /// Why the current password was refused, shown at its field.
        var currentPasswordMessage = ""
        /// The account's address now, for a lead that names it ({email}).
        var currentEmail = ""
        /// A recovery of an account whose second factor is on asks for its code too (issue
        /// 52): the mailbox alone is one factor.
        var asksSecondFactorCode = false
        /// Why the code was refused, shown at its field.
        var secondFactorMessage = ""
    }

    var hasErrors: Bool { !errors.isEmpty || !formError.isEmpty }
}

extension SignupPage: PageView {
    static let template = "signup"

    func fill(_ context: inout PageContext) {
        let page = self, language = context.language, assets = context.assets
        let policy = self.policy ?? language.policy
        let accountForm: SignupPage.AccountForm? = {
            if case .accountForm(let form) = page.purpose { return form }
            return nil
        }()
        let text = context.text
        // The passkey step follows the last password field; the choice comes before the password.
        let passkeyState = page.requirementStates[policy.passkeyCreated.id] ?? (page.passkeyCreated ? .met : .unmet)
        let passkeyMessage = page.messages[.passkey] ?? ""
        // In a <template>: the page's script puts it in the form in place of the password
        // fields when the person chooses a passkey (a page without WebAuthn never shows it).
        let passkeyStep: [String: Any] = [
            "requirement": ["id": policy.passkeyCreated.id, "text": policy.passkeyCreated.text,
                            "state": passkeyState.rawValue, "stateText": text("state.\(passkeyState.rawValue)")],
            "message": passkeyMessage,
            "hasMessage": !passkeyMessage.isEmpty,
        ]
        // Through a provider: its step where the passkey's would be, and no password fields.
        let providerStep: [String: Any]? = page.provider.map { name in
            let state = page.requirementStates[policy.providerSignedIn.id] ?? .met
            return ["labelHTML": text.html("provider.step_label", ["provider": .name(name)]),
                    "hintHTML": text.html("provider.step_hint", ["provider": .name(name)]),
                    "requirement": ["id": policy.providerSignedIn.id, "text": policy.providerSignedIn.text,
                                    "state": state.rawValue, "stateText": text("state.\(state.rawValue)")]]
        }
        let fields: [[String: Any]] = policy.fields.compactMap { formField -> [String: Any]? in
            let field = formField.field
            if let providerStep, field.isSecret {
                return field == policy.passkeyStepFollows ? ["isProviderStep": true, "providerStep": providerStep] : nil
            }
            let kind = formField.kind
            let message = page.messages[field] ?? ""
            let value = field.isSecret ? "" : page.values[field] ?? ""
            let label = formField.label ?? text("field.\(field.rawValue).label")
            let linked = formField.declaration.linkURL.flatMap { _ in DeclaredFieldRules.linkedWords(in: label) }
            let autocomplete = formField.declaration.autocomplete ?? Self.autocomplete(kind)
            return [
                "name": field.rawValue,
                "label": label,
                "labelBefore": linked?.before ?? label,
                "labelLink": linked?.link ?? "",
                "labelAfter": linked?.after ?? "",
                "hasLink": linked != nil,
                "linkURL": formField.declaration.linkURL ?? "",
                "hint": formField.hint ?? "",
                "hasHint": formField.hint != nil,
                // A declared field that may stay empty says so; the built-in four are all needed.
                "isOptional": !kind.isBuiltIn && !formField.declaration.isRequired && !formField.declaration.mustBeAccepted,
                "isBuiltIn": kind.isBuiltIn,
                "isCheckbox": kind == .checkbox,
                "isSelect": kind == .select,
                "isInput": kind != .checkbox && kind != .select,
                "checked": DeclaredFieldRules.tickedValues.contains(value),
                "options": formField.options.map { option -> [String: Any] in
                    ["value": option.value, "label": option.label, "selected": option.value == value]
                },
                "inputType": Self.inputType(kind),
                // Right-to-left pages: an address is Latin, left to right; a name or a
                // password goes the way its first strong letter does.
                "inputDir": field == .email ? "ltr" : "auto",
                "autocomplete": autocomplete ?? "",
                "hasAutocomplete": autocomplete != nil,
                "value": value,
                "message": message,
                "hasMessage": !message.isEmpty,
                "showsStrength": field == .password,
                // The slot the live page fills with "Did you mean …?" (only the email has one).
                "hasSuggestionSlot": field == .email,
                // false when there is none: Mustache shows a section for a nil inside `Any`.
                "suggestion": (page.suggestions[field].map { suggestion -> [String: String] in
                    let words = PageRenderer.split(text("page.suggestion"), at: "{suggestion}")
                    return ["before": words.before, "value": suggestion, "after": words.after]
                } as Any?) ?? false,
                // Password managers generate to these (Safari reads `passwordrules`; the others
                // `minlength`/`maxlength`), so a generated password passes the first time.
                // maxlength counts UTF-16 units, never more than the UTF-8 bytes the policy
                // bounds, so no password the server accepts is cut short by it.
                "isNewPassword": field == .password || field == .confirm,
                "minLength": policy.settings.passwordMinimumLength,
                "maxLength": policy.settings.passwordMaximumBytes,
                // A declared text's own bound (code points; the browser counts UTF-16 units,
                // never fewer), so nobody types past what the server accepts.
                "textMaxLength": kind == .text ? formField.declaration.maximumLength ?? DeclaredFieldRules.longestText : 0,
                "passwordRules": Self.passwordRules(policy.settings),
                // A new password is a password: no passkey instead of it on that form.
                "offersPasskey": field == .password && accountForm == nil,
                // false when there is none: Mustache shows a section for a nil inside `Any`.
                "passkeyStep": field == policy.passkeyStepFollows && accountForm == nil ? passkeyStep : false,
                "requirements": policy.requirements(for: field).map { requirement -> [String: Any] in
                    let state = page.requirementStates[requirement.id] ?? .unmet
                    return ["id": requirement.id, "text": requirement.text,
                            "state": state.rawValue, "stateText": text("state.\(state.rawValue)")]
                },
            ]
        }
        // The strength label in this language (a page re-rendered after a submit has none yet).
        let strengthLabel = policy.settings.texts(PolicyText.strengthLabel(score: page.strength.score))
        let title = text(accountForm?.title ?? "page.title")
        // Over the shared values: the switcher leads to this form's page, and providers are offered
        // on a sign-up only.
        context.merge([
            // The switcher leads to the form's own page (a page sent back after a post is at /signup).
            "languageLinks": context.renderer.languageLinks(language, path: accountForm?.action ?? "/"),
            "title": title,
            "pageTitle": context.title(title, failed: page.hasErrors),
            "hasErrors": page.hasErrors,
            "errors": page.errors.map { ["field": $0.field.rawValue, "message": $0.message] },
            "selectPlaceholder": text("field.select.placeholder"),
            "formError": page.formError,
            "submitEnabled": Self.submitEnabled(page, policy: policy) ? "true" : "false",
            "token": page.token,
            "returnTo": page.returnTo,
            "signinQuery": page.signInQuery
                ?? PageRenderer.query(languageQuery: PageRenderer.languageQuery(language), returnTo: page.returnTo),
            "scriptURL": assets.url(for: "app.js"),
            "formAction": accountForm?.action ?? "/signup",
            "isSignup": accountForm == nil,
            // A new-password form: whose (for password managers, and the lead), and where
            // the page's script asks for a fresh live session.
            "accountForm": accountForm.map { form -> [String: Any] in
                ["username": form.username,
                 "leadHTML": text.html(form.lead, ["username": .name(form.username), "email": .name(form.currentEmail)]),
                 "asksCurrentPassword": form.asksCurrentPassword,
                 "currentPasswordMessage": form.currentPasswordMessage,
                 "currentPasswordInvalid": !form.currentPasswordMessage.isEmpty,
                 "asksSecondFactorCode": form.asksSecondFactorCode,
                 "secondFactorField": RecoveryRoutes.secondFactorField,
                 "secondFactorMessage": form.secondFactorMessage,
                 "secondFactorInvalid": !form.secondFactorMessage.isEmpty]
            } ?? false,
            "sessionURL": accountForm?.sessionURL ?? "/sessions",
            "hasChallenge": !page.challenge.isEmpty,
            "challenge": page.challenge,
            "proofWorkerURL": assets.url(for: "proof-worker.js"),
            "proofScriptURL": assets.url(for: "proof.js"),
            "fields": fields,
            "strength": ["score": page.strength.score, "label": strengthLabel,
                         "warning": page.strength.warning, "suggestions": page.strength.suggestions],
            "policyName": policy.name,
            "credential": page.credential.rawValue,
            "passkeyScriptURL": assets.url(for: "passkey.js"),
            // Offered on the sign-up form, not on a form about an account or one already through a provider.
            "hasProviders": accountForm == nil && page.provider == nil && !context.renderer.providers.isEmpty,
            "submitLabel": text(accountForm?.submit ?? "page.submit"),
        ])
    }
}

extension SignupPage {
    /// The sign-up page as every fresh visit gets it, rendered once at start: only the
    /// token differs between visits, and rendering the template for each `GET /` was 7 %
    /// of the server's time under typing load.
    struct Blank: Sendable {
        fileprivate enum Segment: Sendable {
            case text(String)
            case token
            case returnTo
            case signInQuery
            case challenge
        }
        fileprivate let segments: [Segment]
        fileprivate let languageQuery: String
        /// The fixed text's length and room for a request's values: the page is built in one
        /// allocation.
        private let capacity: Int

        fileprivate init(segments: [Segment], languageQuery: String) {
            self.segments = segments
            self.languageQuery = languageQuery
            capacity = segments.reduce(1024) { total, segment in
                if case .text(let text) = segment { return total + text.utf8.count }
                return total
            }
        }

        /// `returnTo` must be validated (`ReturnTo`); it is escaped here for its places.
        /// `challenge` is the form's proof-of-work challenge as JSON (escaped here).
        func render(token: String, returnTo: String? = nil, challenge: String = "") -> String {
            var page = ""
            page.reserveCapacity(capacity)
            for segment in segments {
                switch segment {
                case .text(let text): page += text
                case .token: page += token
                case .returnTo: page += returnTo.map(PageRenderer.escapeAttribute) ?? ""
                case .signInQuery: page += PageRenderer.query(languageQuery: languageQuery, returnTo: returnTo)
                case .challenge: page += PageRenderer.escapeAttribute(challenge)
                }
            }
            return page
        }
    }

    /// `withChallenge`: whether forms carry a proof-of-work challenge (each page its own).
    static func blank(_ renderer: PageRenderer, language: Languages.Language, assets: StaticAssets,
                      withChallenge: Bool = false) -> Blank {
        // Text no template contains and that HTML escaping leaves alone, where each
        // request's own values go.
        let slots: [(String, Blank.Segment)] = [
            ("\u{1}token\u{1}", .token), ("\u{1}return\u{1}", .returnTo), ("\u{1}signin\u{1}", .signInQuery),
            ("\u{1}challenge\u{1}", .challenge),
        ]
        // The empty form's own states: an optional field left empty already meets its rules.
        var page = SignupPage(
            token: slots[0].0, values: [:],
            requirementStates: language.policy.initialEvaluation.requirementStates,
            messages: [:], strength: .none)
        page.returnTo = slots[1].0
        page.signInQuery = slots[2].0
        if withChallenge { page.challenge = slots[3].0 }
        var segments: [Blank.Segment] = [.text(renderer.render(page, language: language, assets: assets))]
        for (marker, slot) in slots {
            segments = segments.flatMap { segment -> [Blank.Segment] in
                guard case .text(let text) = segment else { return [segment] }
                let parts = text.components(separatedBy: marker)
                return parts.enumerated().flatMap { index, part in index == 0 ? [.text(part)] : [slot, .text(part)] }
            }
        }
        return Blank(segments: segments, languageQuery: PageRenderer.languageQuery(language))
    }

    /// Apple's `passwordrules` for the policy: "minlength: 12; maxlength: 1024; required: upper;".
    static func passwordRules(_ settings: Policy) -> String {
        var rules = ["minlength: \(settings.passwordMinimumLength)", "maxlength: \(settings.passwordMaximumBytes)"]
        if settings.requiresUppercase { rules.append("required: upper") }
        return rules.joined(separator: "; ") + ";"
    }

    /// Whether every requirement of the page is met, as `data-submit-enabled` says before the
    /// first snapshot (the page's script keeps it in step with `submit.enabled` after).
    static func submitEnabled(_ page: SignupPage, policy: FormPolicy) -> Bool {
        !page.hasErrors && policy.allRequirements.allSatisfy { page.requirementStates[$0.id] == .met }
    }

    static func inputType(_ kind: FieldDeclaration.Kind) -> String {
        switch kind {
        case .email: return "email"
        case .password, .confirm: return "password"
        case .checkbox: return "checkbox"
        case .username, .text, .select: return "text"
        }
    }

    /// The built-in fields' autocomplete tokens; a declared field has its own or none.
    static func autocomplete(_ kind: FieldDeclaration.Kind) -> String? {
        switch kind {
        case .username: return "username"
        case .email: return "email"
        case .password, .confirm: return "new-password"
        case .text, .checkbox, .select: return nil
        }
    }
}
