import Foundation
import MicroHTTPD
import Mustache
import ReactiveValidation
import SignupDomain

/// Renders the HTML pages from the Mustache templates in Templates/.
struct PageRenderer: Sendable {
    enum LoadError: Error, CustomStringConvertible {
        case missingTemplate(String, directory: String)
        var description: String {
            switch self {
            case .missingTemplate(let name, let directory):
                return "Template '\(name).mustache' not found in \(directory)"
            }
        }
    }

    private let library: MustacheLibrary
    /// The site's name every page shows: the policy's `service_name`.
    let serviceName: String
    /// The OpenID providers offered on the sign-up and sign-in pages (id, name), in the
    /// policy's order: plain forms, so they work without JavaScript.
    let providers: [(id: String, name: String)]

    /// Every language the server speaks (tag, its own name), for the switcher on each page.
    let languageNames: [(tag: String, name: String)]

    init(directory: URL, serviceName: String = Policy.defaults.serviceName, languageNames: [(tag: String, name: String)] = [],
         providers: [(id: String, name: String)] = []) throws {
        self.serviceName = serviceName
        self.languageNames = languageNames
        self.providers = providers
        var templates: [String: MustacheTemplate] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
        where name.hasSuffix(".mustache") {
            let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            templates[String(name.dropLast(".mustache".count))] = try MustacheTemplate(string: text)
        }
        for required in ["signup", "welcome", "signin", "problem", "verify", "recover", "account", "account-delete", "account-email", "second-factor", "mail.txt", "mail.html"] where templates[required] == nil {
            throw LoadError.missingTemplate(required, directory: directory.path)
        }
        library = MustacheLibrary(templates: templates)
    }

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

            static func recovery(username: String, asksSecondFactorCode: Bool = false, message: String = "") -> AccountForm {
                AccountForm(username: username, action: "/recover/password", sessionURL: "/recover/session",
                            title: "recover.password_title", lead: "recover.password_lead", submit: "recover.password_submit",
                            asksSecondFactorCode: asksSecondFactorCode, secondFactorMessage: message)
            }

            static func change(username: String, hasPassword: Bool, message: String = "") -> AccountForm {
                AccountForm(username: username, action: "/account/password", sessionURL: "/account/password/session",
                            title: hasPassword ? "account.password_title" : "account.set_password_title",
                            lead: "account.password_lead", submit: "account.password_submit",
                            asksCurrentPassword: hasPassword, currentPasswordMessage: message)
            }

            static func address(username: String, current: String) -> AccountForm {
                AccountForm(username: username, action: "/account/email", sessionURL: "/account/email/session",
                            title: "account.email_title", lead: "account.email_lead", submit: "account.email_submit",
                            currentEmail: current)
            }
        }

        var hasErrors: Bool { !errors.isEmpty || !formError.isEmpty }
    }

    /// `policy`: the form's rules, the language's sign-up rules unless given (a new-password
    /// form's are its account's, `SignupPolicy.newPassword(for:)`).
    func renderSignup(_ page: SignupPage, language: Languages.Language, assets: StaticAssets,
                      policy: SignupPolicy? = nil) -> String {
        let policy = policy ?? language.policy
        let accountForm: SignupPage.AccountForm? = {
            if case .accountForm(let form) = page.purpose { return form }
            return nil
        }()
        let catalog = language.catalog
        func text(_ key: String) -> String { catalog[key] ?? key }
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
            return ["label": text("provider.step_label").replacingOccurrences(of: "{provider}", with: name),
                    "hint": text("provider.step_hint").replacingOccurrences(of: "{provider}", with: name),
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
                    let words = Self.split(text("page.suggestion"), at: "{suggestion}")
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
        // Catalog keys with dots become underscores for the template ({{t.page_title}}).
        let t = Dictionary(uniqueKeysWithValues: catalog.texts.map { ($0.key.replacingOccurrences(of: ".", with: "_"), $0.value) })
        let context: [String: Any] = [
            "t": t,
            "lang": language.tag,
            "dir": language.catalog.direction,
            "langQuery": Self.languageQuery(language),
            // The switcher leads to the form's own page (a page sent back after a post is at /signup).
            "hasLanguages": languageNames.count > 1,
            "languageLinks": languageLinks(language, path: accountForm?.action ?? "/"),
            "title": title,
            "pageTitle": page.hasErrors ? text("page.error_prefix") + title : title,
            "hasErrors": page.hasErrors,
            "errors": page.errors.map { ["field": $0.field.rawValue, "message": $0.message] },
            "selectPlaceholder": text("field.select.placeholder"),
            "formError": page.formError,
            "serviceName": serviceName,
            "submitEnabled": Self.submitEnabled(page, policy: policy) ? "true" : "false",
            "token": page.token,
            "returnTo": page.returnTo,
            "signinQuery": page.signInQuery
                ?? Self.query(languageQuery: Self.languageQuery(language), returnTo: page.returnTo),
            "scriptURL": assets.url(for: "app.js"),
            "stylesheetURL": assets.url(for: "style.css"),
            "formAction": accountForm?.action ?? "/signup",
            "isSignup": accountForm == nil,
            // A new-password form: whose (for password managers, and the lead), and where
            // the page's script asks for a fresh live session.
            "accountForm": accountForm.map { form -> [String: Any] in
                ["username": form.username,
                 "lead": text(form.lead).replacingOccurrences(of: "{username}", with: form.username)
                    .replacingOccurrences(of: "{email}", with: form.currentEmail),
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
            "hasProviders": accountForm == nil && page.provider == nil && !providers.isEmpty,
            "providers": providerButtons(language),
            "submitLabel": text(accountForm?.submit ?? "page.submit"),
        ]
        return library.render(context, withTemplate: "signup") ?? ""
    }

    /// A text's words before and after a placeholder (all before when it has none).
    static func split(_ text: String, at placeholder: String) -> (before: String, after: String) {
        guard let range = text.range(of: placeholder) else { return (text, "") }
        return (String(text[..<range.lowerBound]), String(text[range.upperBound...]))
    }

    /// The sign-up page as every fresh visit gets it, rendered once at start: only the
    /// token differs between visits, and rendering the template for each `GET /` was 7 %
    /// of the server's time under typing load.
    struct BlankSignupPage: Sendable {
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

    /// The query for a link to the other form (sign-in ↔ sign-up) that keeps the language and
    /// carries `return_to` along (last, percent-encoded).
    static func query(languageQuery: String, returnTo: String?) -> String {
        guard let returnTo, !returnTo.isEmpty else { return languageQuery }
        let encoded = returnTo.addingPercentEncoding(withAllowedCharacters: .urlUnreservedCharacters) ?? ""
        return (languageQuery.isEmpty ? "?" : languageQuery + "&") + "return_to=" + encoded
    }

    /// Text for a double-quoted HTML attribute. Bytes, not characters: every `GET /` escapes
    /// its proof-of-work challenge (some 200 bytes of JSON) this way, and appending Character
    /// by Character (grapheme breaking, a seam check per append) cost about 200,000
    /// instructions a page. The five characters escaped are ASCII, so no multi-byte character
    /// is ever cut; and a quote followed by a combining mark, one Character that no longer
    /// compared equal to `"`, can no longer pass unescaped.
    static func escapeAttribute(_ text: String) -> String {
        var contiguous = text
        return contiguous.withUTF8 { bytes in
            guard bytes.contains(where: { escapedAttributeBytes[Int($0)] != nil }) else { return text }
            var escaped: [UInt8] = []
            escaped.reserveCapacity(bytes.count + 32)
            for byte in bytes {
                if let replacement = escapedAttributeBytes[Int(byte)] {
                    escaped.append(contentsOf: replacement)
                } else {
                    escaped.append(byte)
                }
            }
            return String(decoding: escaped, as: UTF8.self)
        }
    }

    /// What `escapeAttribute` writes for each byte (nil: the byte itself).
    private static let escapedAttributeBytes: [[UInt8]?] = (0...255).map { byte -> [UInt8]? in
        switch UInt8(byte) {
        case UInt8(ascii: "&"): Array("&amp;".utf8)
        case UInt8(ascii: "\""): Array("&quot;".utf8)
        case UInt8(ascii: "'"): Array("&#39;".utf8)
        case UInt8(ascii: "<"): Array("&lt;".utf8)
        case UInt8(ascii: ">"): Array("&gt;".utf8)
        default: nil
        }
    }

    /// `withChallenge`: whether forms carry a proof-of-work challenge (each page its own).
    func blankSignupPage(language: Languages.Language, assets: StaticAssets,
                         withChallenge: Bool = false) -> BlankSignupPage {
        // Text no template contains and that HTML escaping leaves alone, where the token goes.
        // Text no template contains and that HTML escaping leaves alone, where each
        // request's own values go.
        let slots: [(String, BlankSignupPage.Segment)] = [
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
        var segments: [BlankSignupPage.Segment] = [.text(renderSignup(page, language: language, assets: assets))]
        for (marker, slot) in slots {
            segments = segments.flatMap { segment -> [BlankSignupPage.Segment] in
                guard case .text(let text) = segment else { return [segment] }
                let parts = text.components(separatedBy: marker)
                return parts.enumerated().flatMap { index, part in index == 0 ? [.text(part)] : [slot, .text(part)] }
            }
        }
        return BlankSignupPage(segments: segments, languageQuery: Self.languageQuery(language))
    }

    /// What every page shares: the language's texts (`{{t.key_with_underscores}}`), its
    /// tag and direction, and `langQuery` for links that keep the language.
    private func common(_ language: Languages.Language, assets: StaticAssets) -> [String: Any] {
        [
            "t": Dictionary(uniqueKeysWithValues: language.catalog.texts.map {
                ($0.key.replacingOccurrences(of: ".", with: "_"), $0.value)
            }),
            "lang": language.tag, "dir": language.catalog.direction,
            "langQuery": Self.languageQuery(language),
            "serviceName": serviceName, "stylesheetURL": assets.url(for: "style.css"),
            "hasProviders": !providers.isEmpty, "providers": providerButtons(language),
            // The switcher (Templates/languages.mustache): each language in its own name, on
            // this page (`?lang=`).
            "hasLanguages": languageNames.count > 1,
            "languageLinks": languageLinks(language),
        ]
    }

    /// The switcher's links: `path` (this page when "") in each language (`?lang=`), with what
    /// the page's own address must keep (`query`, as "token=…&").
    func languageLinks(_ language: Languages.Language, path: String = "", query: String = "") -> [[String: Any]] {
        languageNames.map { ["tag": $0.tag, "name": $0.name, "isCurrent": $0.tag == language.tag,
                             "href": "\(path)?\(query)lang=\($0.tag)"] }
    }

    /// Each provider's button in `language` ("Continue with …").
    func providerButtons(_ language: Languages.Language) -> [[String: String]] {
        let words = language.catalog["provider.continue"] ?? "{provider}"
        return providers.map { ["id": $0.id, "label": words.replacingOccurrences(of: "{provider}", with: $0.name)] }
    }

    /// "?lang=de" for links that keep a language other than English; "" for English.
    static func languageQuery(_ language: Languages.Language) -> String {
        language.tag == Languages.fallback ? "" : "?lang=\(language.tag)"
    }

    /// `passkeys`: how many the account has (nil when the store could not say: nothing shown).
    func renderWelcome(username: String, passkeys: Int? = nil, language: Languages.Language, assets: StaticAssets) -> String {
        var context = common(language, assets: assets)
        context["pageTitle"] = language.catalog["welcome.title"] ?? ""
        context["heading"] = (language.catalog["welcome.heading"] ?? "").replacingOccurrences(of: "{name}", with: username)
        context["passkeyScriptURL"] = assets.url(for: "passkey.js")
        context["passkeys"] = passkeys ?? -1
        context["hasPasskeys"] = (passkeys ?? 0) > 0
        context["passkeyCount"] = (language.catalog["welcome.passkey_count"] ?? "")
            .filled(["count": .number(passkeys ?? 0)], in: language)
        return library.render(context, withTemplate: "welcome") ?? ""
    }

    /// `proof`: the form token and challenge (JSON) when this client must pay a proof of
    /// work to sign in (after failed sign-ins).
    /// `offersRecovery`: "Forgot your password?" leads to `/recover` (mail can be sent).
    func renderSignIn(username: String, errorMessage: String?, returnTo: String?, language: Languages.Language,
                      assets: StaticAssets, proof: (token: String, challenge: String)? = nil,
                      offersRecovery: Bool = false, notice: String? = nil) -> String {
        var context = common(language, assets: assets)
        context["offersRecovery"] = offersRecovery
        // A provider's identity waiting for this sign-in (issue 45): what signing in does.
        context["notice"] = notice ?? ""
        context["passkeyScriptURL"] = assets.url(for: "passkey.js")
        context["hasChallenge"] = proof != nil
        context["token"] = proof?.token ?? ""
        context["challenge"] = proof?.challenge ?? ""
        context["proofWorkerURL"] = assets.url(for: "proof-worker.js")
        context["proofScriptURL"] = assets.url(for: "proof.js")
        context["returnTo"] = returnTo ?? ""
        context["signupQuery"] = Self.query(languageQuery: Self.languageQuery(language), returnTo: returnTo)
        let title = language.catalog["signin.title"] ?? ""
        context["pageTitle"] = errorMessage == nil ? title : (language.catalog["page.error_prefix"] ?? "") + title
        context["username"] = username
        context["hasError"] = errorMessage != nil
        context["errorMessage"] = errorMessage ?? ""
        return library.render(context, withTemplate: "signin") ?? ""
    }

    /// What `/verify` shows: the code form for a pending sign-up (`token`), or the button
    /// that confirms a mailed link (`linkToken`).
    struct VerifyPage {
        var heading: String
        var lead: String
        var token: String?
        /// The confirmation of a mailed link (its secret is in a cookie, never in the page).
        var confirmsLink = false
        var code = ""
        /// A notice above the form ("We sent a new code").
        var notice = ""
        /// The code field's message (shape, wrong code); also the error summary's entry.
        var fieldError = ""
        /// An error about the page as a whole (too many mails): the summary only.
        var formError = ""
        /// The code form's proof-of-work challenge as JSON, after failures ("" otherwise).
        var challenge = ""
    }

    func renderVerify(_ page: VerifyPage, language: Languages.Language, assets: StaticAssets) -> String {
        var context = common(language, assets: assets)
        let error = page.fieldError.isEmpty ? page.formError : page.fieldError
        context["pageTitle"] = error.isEmpty ? page.heading : (language.catalog["page.error_prefix"] ?? "") + page.heading
        context["heading"] = page.heading
        context["lead"] = page.lead
        // Absent, not "", where a section is not shown: Mustache shows one for any string.
        context["token"] = page.token
        // The code page's address carries its sign-up's token: the switcher keeps it.
        if let token = page.token {
            let encoded = token.addingPercentEncoding(withAllowedCharacters: .urlUnreservedCharacters) ?? ""
            context["languageLinks"] = languageLinks(language, query: "token=\(encoded)&")
        }
        context["confirmsLink"] = page.confirmsLink ? true : nil
        context["code"] = page.code
        context["codePattern"] = VerificationCodeShape.pattern
        context["notice"] = page.notice.isEmpty ? nil : page.notice
        context["fieldError"] = page.fieldError.isEmpty ? nil : page.fieldError
        context["hasError"] = !error.isEmpty
        context["errorMessage"] = error
        context["errorTarget"] = page.token == nil ? "confirm" : "code"
        context["scriptURL"] = assets.url(for: "app.js")
        context["hasChallenge"] = !page.challenge.isEmpty
        context["challenge"] = page.challenge
        context["proofWorkerURL"] = assets.url(for: "proof-worker.js")
        context["proofScriptURL"] = assets.url(for: "proof.js")
        return library.render(context, withTemplate: "verify") ?? ""
    }

    /// What `/recover` shows: the request form (a username or address), or after it the code
    /// form (`recoveryToken`), in the same words whether or not an account matched.
    struct RecoverPage {
        /// What was typed into the request form.
        var identifier = ""
        /// The recovery the code form is for (the code form is shown when set).
        var recoveryToken: String?
        var code = ""
        /// The field's message (empty, wrong code); also the error summary's entry.
        var fieldError = ""
        /// About the page as a whole (too many requests, a refused proof): the summary only.
        var formError = ""
        /// A proof-of-work challenge (JSON) and the form token it is bound to.
        var proof: (token: String, challenge: String)?
    }

    func renderRecover(_ page: RecoverPage, language: Languages.Language, assets: StaticAssets) -> String {
        var context = common(language, assets: assets)
        func text(_ key: String) -> String { language.catalog[key] ?? key }
        let heading = page.recoveryToken == nil ? text("recover.title") : text("recover.code_title")
        let error = page.fieldError.isEmpty ? page.formError : page.fieldError
        context["pageTitle"] = error.isEmpty ? heading : text("page.error_prefix") + heading
        context["heading"] = heading
        context["hasError"] = !error.isEmpty
        context["errorMessage"] = error
        context["errorTarget"] = page.recoveryToken == nil ? Self.recoverIdentifierField : "code"
        // Absent, not "", where a section is not shown: Mustache shows one for any string.
        context["fieldError"] = page.fieldError.isEmpty ? nil : page.fieldError
        context["identifier"] = page.identifier
        context["identifierField"] = Self.recoverIdentifierField
        context["recoveryToken"] = page.recoveryToken
        context["askForAccount"] = page.recoveryToken == nil ? true : nil
        context["code"] = page.code
        context["codePattern"] = VerificationCodeShape.pattern
        context["scriptURL"] = assets.url(for: "app.js")
        context["hasChallenge"] = page.proof != nil
        context["token"] = page.proof?.token ?? ""
        context["challenge"] = page.proof?.challenge ?? ""
        context["proofWorkerURL"] = assets.url(for: "proof-worker.js")
        context["proofScriptURL"] = assets.url(for: "proof.js")
        return library.render(context, withTemplate: "recover") ?? ""
    }

    /// The request form's one field (`RecoveryRoutes.identifierField`).
    static let recoverIdentifierField = "identifier"

    /// What `/account` shows: whose account, and where it is signed in.
    struct AccountPage {
        struct Device {
            /// The session's handle, posted to end it.
            var handle: String
            /// "Firefox · Linux", "" when the browser did not say.
            var device: String
            var network: String
            var began: Date
            var lastUsed: Date
            var isThisBrowser: Bool
        }
        struct PasskeyEntry {
            /// Its credential id, base64url: posted to rename or remove it.
            var handle: String
            var name: String
            var created: Date
            var lastUsed: Date?
            /// Backed up by its provider (synced to the person's other devices), else bound to one device.
            var isSynced: Bool
            /// The account's only way in: it cannot be removed.
            var isLastWayIn: Bool
        }
        var username: String
        /// Until when sensitive changes are open (a recent sign-in); nil asks to confirm first.
        var openUntil: Date?
        /// Whether it confirms with its password (a passkey-only account signs in again).
        var confirmsWithPassword: Bool
        var hasPassword: Bool
        /// The account's address, and whether it can be changed here (mail is configured).
        var email: String
        var offersEmailChange: Bool
        /// Whether `/account/second-factor` has something to show (the policy offers one, or
        /// the account has one).
        var offersSecondFactor: Bool
        /// The change that sent the person here to confirm first (the confirmation continues to it).
        var continuation: RecentSignIn.Continuation?
        var devices: [Device]
        var passkeys: [PasskeyEntry]
        /// Identities from OpenID providers linked to the account (issue 45).
        struct ProviderEntry {
            var id: String
            var name: String
            var email: String
            var issuer: String
            var subject: String
            var linked: Date
            /// The account's only way in: it cannot be unlinked.
            var isLastWayIn: Bool
        }
        var linkedProviders: [ProviderEntry] = []
        /// Configured providers not linked yet: each a "Link <provider>" button.
        var linkableProviders: [(id: String, name: String)] = []
        /// "Signed out on that device." after an ending.
        var notice: String?
        /// A refused request about the page as a whole.
        var error: String?
    }

    /// A time as the account page shows it: in UTC, in the language's own order of day,
    /// month and time (the server does not know the person's zone, and says which one it shows).
    static func accountTime(_ date: Date, language: Languages.Language) -> String {
        // One formatter per language, made once (making one costs far more than using it: the
        // account page's stream formatted two new ones per device line, issue 52), used under
        // a lock because Foundation's formatters are not documented as thread-safe here.
        accountTimeFormatters.withLock { formatters in
            let formatter = formatters[language.tag] ?? {
                let made = DateFormatter()
                made.locale = Locale(identifier: language.tag)
                made.timeZone = TimeZone(identifier: "UTC")
                made.dateStyle = .medium
                made.timeStyle = .short
                formatters[language.tag] = made
                return made
            }()
            return formatter.string(from: date) + " UTC"
        }
    }

    /// By language tag; bounded by the languages the server has.
    private static let accountTimeFormatters = Locked<[String: DateFormatter]>([:])

    /// "Network 203.0.113.0/24 · signed in … · last used …": a device's line on the account
    /// page, and in its stream's `devices` events.
    static func deviceDetails(network: String, began: Date, lastUsed: Date, language: Languages.Language) -> String {
        func text(_ key: String) -> String { language.catalog[key] ?? key }
        return (network.isEmpty ? "" : "\(text("account.network")) \(network) · ")
            + "\(text("account.began")) \(accountTime(began, language: language)) · "
            + "\(text("account.last_used")) \(accountTime(lastUsed, language: language))"
    }

    func renderAccount(_ page: AccountPage, language: Languages.Language, assets: StaticAssets) -> String {
        var context = common(language, assets: assets)
        func text(_ key: String) -> String { language.catalog[key] ?? key }
        let iso = ISO8601DateFormatter()
        func when(_ date: Date) -> [String: String] { ["iso": iso.string(from: date), "text": Self.accountTime(date, language: language)] }
        let title = text("account.title")
        context["pageTitle"] = page.error == nil ? title : text("page.error_prefix") + title
        context["heading"] = title
        context["lead"] = text("account.lead").replacingOccurrences(of: "{name}", with: page.username)
        context["notice"] = page.notice
        context["hasError"] = page.error != nil
        context["errorMessage"] = page.error ?? ""
        context["sessionField"] = AccountRoutes.sessionField
        if let openUntil = page.openUntil {
            let time = when(openUntil)
            // The countdown's words for each minute left, in the language's plural forms (the
            // page's script picks one; it has no plural rules of its own).
            let byMinute = (0...60).map { text("account.unlocked_remaining").filled(["minutes": .number($0)], in: language) }
            let json = (try? JSONSerialization.data(withJSONObject: byMinute)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
            context["openUntil"] = ["iso": time["iso"]!, "text": text("account.unlocked").replacingOccurrences(of: "{time}", with: time["text"]!),
                                    "remaining": text("account.unlocked_remaining"), "remainingByMinute": json]
        }
        context["asksToConfirm"] = page.openUntil == nil
        context["username"] = page.username
        context["confirmsWithPassword"] = page.confirmsWithPassword
        context["devices"] = page.devices.map { device -> [String: Any] in
            [
                "handle": device.handle,
                "device": device.device.isEmpty ? text("account.unknown_device") : device.device,
                "network": device.network,
                "hasNetwork": !device.network.isEmpty,
                "began": when(device.began),
                "lastUsed": when(device.lastUsed),
                "details": Self.deviceDetails(network: device.network, began: device.began, lastUsed: device.lastUsed,
                                              language: language),
                "isThisBrowser": device.isThisBrowser,
            ]
        }
        context["hasOthers"] = page.devices.contains { !$0.isThisBrowser }
        context["hasPassword"] = page.hasPassword
        context["offersEmailChange"] = page.offersEmailChange
        context["offersSecondFactor"] = page.offersSecondFactor
        context["emailNow"] = text("account.email_now").replacingOccurrences(of: "{email}", with: page.email)
        context["continuation"] = page.continuation?.rawValue ?? ""
        context["continueField"] = RecentSignIn.Continuation.field
        context["passkeyField"] = AccountRoutes.passkeyField
        context["passkeyNameField"] = AccountRoutes.passkeyNameField
        context["passkeyNameMax"] = PasskeyName.maximumLength
        context["offersProviders"] = !page.linkedProviders.isEmpty || !page.linkableProviders.isEmpty
        context["hasLinkedProviders"] = !page.linkedProviders.isEmpty
        context["linkedProviders"] = page.linkedProviders.map { entry -> [String: Any] in
            ["id": entry.id, "name": entry.name, "email": entry.email, "issuer": entry.issuer, "subject": entry.subject,
             "linkedAt": text("account.provider_linked_at").replacingOccurrences(of: "{date}",
                                                                                 with: Self.accountTime(entry.linked, language: language)),
             "isLastWayIn": entry.isLastWayIn]
        }
        context["linkableProviders"] = page.linkableProviders.map { provider -> [String: String] in
            ["id": provider.id, "label": text("account.provider_link").replacingOccurrences(of: "{provider}", with: provider.name)]
        }
        // An account without a password confirms who it is with a provider it has linked.
        context["confirmProviders"] = page.linkedProviders.map { entry -> [String: String] in
            ["id": entry.id, "label": text("provider.continue").replacingOccurrences(of: "{provider}", with: entry.name)]
        }
        context["hasPasskeys"] = !page.passkeys.isEmpty
        context["passkeyCount"] = page.passkeys.count
        context["passkeyScriptURL"] = assets.url(for: "passkey.js")
        context["accountScriptURL"] = assets.url(for: "account.js")
        context["passkeys"] = page.passkeys.map { passkey -> [String: Any] in
            [
                "handle": passkey.handle,
                "name": passkey.name,
                "created": when(passkey.created),
                "lastUsed": passkey.lastUsed.map(when) ?? false,
                "kind": text(passkey.isSynced ? "account.passkey_synced" : "account.passkey_device_bound"),
                "isLastWayIn": passkey.isLastWayIn,
            ]
        }
        return library.render(context, withTemplate: "account") ?? ""
    }

    /// `/account/delete`: what deleting the account will end, and the field where its
    /// username is typed to confirm.
    struct DeletionPage {
        var username: String
        var sessions: Int
        var passkeys: Int
        /// The labels of the profile fields the account has values for.
        var profileFields: [String]
        var error: String?
        /// How long the username stays kept from new accounts.
        var reservedDays: Int
    }

    func renderDeletion(_ page: DeletionPage, language: Languages.Language, assets: StaticAssets) -> String {
        var context = common(language, assets: assets)
        func text(_ key: String) -> String { language.catalog[key] ?? key }
        let title = text("account.delete_title")
        context["pageTitle"] = page.error == nil ? title : text("page.error_prefix") + title
        context["heading"] = title
        context["username"] = page.username
        context["hasError"] = page.error != nil
        context["errorMessage"] = page.error ?? ""
        context["confirmField"] = AccountChangeRoutes.confirmUsernameField
        // Each line on its own: the sessions' count is kept current by the page's stream.
        context["sessionsLine"] = text("account.delete_sessions").filled(["n": .number(page.sessions)], in: language)
        context["passkeysLine"] = text("account.delete_passkeys").filled(["n": .number(page.passkeys)], in: language)
        context["profileLine"] = page.profileFields.isEmpty ? "" : text("account.delete_profile")
            .replacingOccurrences(of: "{fields}", with: page.profileFields.joined(separator: ", "))
        context["accountScriptURL"] = assets.url(for: "account.js")
        context["typeLabel"] = text("account.delete_type_label").replacingOccurrences(of: "{username}", with: page.username)
        context["reserved"] = text("account.delete_reserved").filled(["days": .number(page.reservedDays)], in: language)
        return library.render(context, withTemplate: "account-delete") ?? ""
    }

    /// The pages of an address change around its live form: the code sent to the new
    /// address, and the old address's undo link.
    struct AddressPage {
        enum Mode {
            /// The code form; the new address shown masked.
            case code(address: String)
            /// The undo link's page: a button that posts it ("" for a link that is not one).
            /// `link` empty: nothing to undo; otherwise the form posts the secret from its cookie.
            case undo(link: String)
            /// What the undo did: the old address back (every browser signed out), or nothing;
            /// `cleaned`: ways in added since the change were removed too.
            case undone(restored: Bool, cleaned: Bool = false)
        }
        var mode: Mode
        var error: String?
    }

    func renderAddress(_ page: AddressPage, language: Languages.Language, assets: StaticAssets) -> String {
        var context = common(language, assets: assets)
        func text(_ key: String) -> String { language.catalog[key] ?? key }
        let title: String
        switch page.mode {
        case .code(let address):
            title = text("account.email_code_title")
            context["code"] = ["lead": text("account.email_code_lead").replacingOccurrences(of: "{address}", with: EmailAddress.masked(address)),
                               "field": AccountEmailRoutes.codeField]
        case .undo(let link):
            title = text("account.email_undo_title")
            context["undo"] = !link.isEmpty
            context["message"] = link.isEmpty ? text("account.email_undo_gone") : text("account.email_undo_lead")
        case .undone(let restored, let cleaned):
            title = text(restored ? "account.email_restored_title" : "account.email_undo_title")
            context["message"] = text(restored ? "account.email_restored" : "account.email_undo_gone")
            context["restored"] = restored
            context["cleaned"] = cleaned ? text("account.email_restored_cleaned") : false
        }
        context["pageTitle"] = page.error == nil ? title : text("page.error_prefix") + title
        context["heading"] = title
        context["hasError"] = page.error != nil
        context["errorMessage"] = page.error ?? ""
        return library.render(context, withTemplate: "account-email") ?? ""
    }

    /// The second factor's pages (issue 44): its setup, its state, recovery codes shown once,
    /// and the sign-in's code step.
    struct SecondFactorPage {
        enum Mode {
            /// A new secret: its QR code (SVG), its key as typed, its otpauth URI, where its
            /// first code is posted (`/account/second-factor`, or `/signin/second-factor` when
            /// the policy requires one before any session).
            case setup(qr: String, key: String, uri: String, action: String)
            case enabled(codesLeft: Int)
            /// Recovery codes, shown this once, and where to go on.
            case codes([String], next: String)
            /// The sign-in's step after the right password.
            case signIn
        }
        var mode: Mode
        var error: String?
    }

    func renderSecondFactor(_ page: SecondFactorPage, language: Languages.Language, assets: StaticAssets) -> String {
        var context = common(language, assets: assets)
        func text(_ key: String) -> String { (language.catalog[key] ?? key).replacingOccurrences(of: "{service}", with: serviceName) }
        let title: String
        context["codeField"] = SecondFactorRoutes.codeField
        switch page.mode {
        case .setup(let qr, let key, let uri, let action):
            title = text("second_factor.setup_title")
            context["setup"] = ["qr": qr, "key": key, "uri": uri, "action": action,
                                "required": action.hasPrefix("/signin") ? text("second_factor.required_lead") : ""]
        case .enabled(let left):
            title = text("second_factor.on_title")
            context["enabled"] = ["codesLeft": text("second_factor.codes_left").filled(["n": .number(left)], in: language)]
        case .codes(let codes, let next):
            title = text("second_factor.codes_title")
            context["codes"] = ["list": codes, "next": next]
        case .signIn:
            title = text("second_factor.signin_title")
            context["signIn"] = true
        }
        context["pageTitle"] = page.error == nil ? title : text("page.error_prefix") + title
        context["heading"] = title
        context["hasError"] = page.error != nil
        context["errorMessage"] = page.error ?? ""
        context["scriptURL"] = assets.url(for: "second-factor.js")
        return library.render(context, withTemplate: "second-factor") ?? ""
    }

    /// What a mail says, in its language: the same words become its text and its HTML part.
    struct MailContent {
        var subject: String
        var heading: String
        var lead: String
        var code: String?
        var linkLead: String?
        var linkURL: String?
        var linkText: String?
        var after: [String]
        var footer: String
    }

    /// The mail's text and HTML parts (`mail.txt` and `mail.html` templates).
    func renderMail(_ mail: MailContent, language: Languages.Language) -> (text: String, html: String) {
        // Absent keys, not empty strings, for the sections a mail lacks: Mustache shows a
        // section for any string, "" included.
        var context: [String: Any] = [
            "lang": language.tag, "dir": language.catalog.direction, "serviceName": serviceName,
            "subject": mail.subject, "heading": mail.heading, "lead": mail.lead,
            "after": mail.after, "footer": mail.footer,
        ]
        context["code"] = mail.code
        context["linkLead"] = mail.linkLead
        context["linkURL"] = mail.linkURL
        context["linkText"] = mail.linkText
        return (library.render(context, withTemplate: "mail.txt") ?? "", library.render(context, withTemplate: "mail.html") ?? "")
    }

    /// A page that explains why a request was refused (too fast, another site, shutting
    /// down) and where to go next. `code` is the same machine-readable code JSON errors use.
    func renderProblem(title: String, message: String, code: String, linkURL: String = "/",
                       linkText: String? = nil, language: Languages.Language, assets: StaticAssets) -> String {
        var context = common(language, assets: assets)
        context["title"] = title
        context["message"] = message
        context["code"] = code
        context["linkURL"] = linkURL + Self.languageQuery(language)
        context["linkText"] = linkText ?? language.catalog["problem.back"] ?? ""
        return library.render(context, withTemplate: "problem") ?? ""
    }

    /// Apple's `passwordrules` for the policy: "minlength: 12; maxlength: 1024; required: upper;".
    static func passwordRules(_ settings: Policy) -> String {
        var rules = ["minlength: \(settings.passwordMinimumLength)", "maxlength: \(settings.passwordMaximumBytes)"]
        if settings.requiresUppercase { rules.append("required: upper") }
        return rules.joined(separator: "; ") + ";"
    }

    /// Whether every requirement of the page is met, as `data-submit-enabled` says before the
    /// first snapshot (the page's script keeps it in step with `submit.enabled` after).
    static func submitEnabled(_ page: SignupPage, policy: SignupPolicy) -> Bool {
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

extension CharacterSet {
    /// RFC 3986's unreserved characters: what a query value keeps as is.
    static let urlUnreservedCharacters = CharacterSet(charactersIn:
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
