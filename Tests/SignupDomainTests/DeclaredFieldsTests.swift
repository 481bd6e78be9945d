import CombineSchedulers
import Foundation
import ReactiveValidation
import SignupDomain
import XCTest

/// Fields a policy file declares: what a good declaration becomes (rules, texts, order), what
/// a bad one is refused with (`file:line: reason`), and a view model over any number of
/// fields, driven in virtual time.
final class DeclaredFieldsTests: XCTestCase {
    private let builtIn = """
          - name: username
          - name: email
          - name: password
          - name: confirm
        """

    private func parse(_ fields: String, before: String = "") throws -> Policy {
        try PolicyFile.parse(before + "fields:\n" + fields, file: "policy.yaml", baseDirectory: URL(fileURLWithPath: "/"))
    }

    /// The reason a file is refused, with its line.
    private func refusal(_ fields: String, before: String = "") -> String {
        do {
            _ = try parse(fields, before: before)
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    private func expectRefusal(_ fields: String, startsWith prefix: String, file: StaticString = #filePath, line: UInt = #line) {
        let reason = refusal(fields)
        XCTAssertTrue(reason.hasPrefix(prefix), reason, file: file, line: line)
    }

    private func expectRefusal(_ fields: String, containing part: String, file: StaticString = #filePath, line: UInt = #line) {
        let reason = refusal(fields)
        XCTAssertTrue(reason.contains(part), reason, file: file, line: line)
    }

    // MARK: Declarations

    func testThePresetsDeclareTheBuiltInFourInTheirOrder() {
        for policy in Policy.all {
            XCTAssertEqual(policy.fields.map(\.name), ["username", "email", "password", "confirm"], policy.name)
            XCTAssertEqual(FormPolicy(policy).allRequirements.map(\.id),
                           FormPolicy(policy).fieldOrder.flatMap { field in
                               FormPolicy(policy).requirements(for: field).map(\.id)
                           })
        }
        XCTAssertEqual(FormPolicy.classic().allRequirements.map(\.id), [
            "username.length", "username.charset", "username.available", "email.format",
            "password.length", "password.uppercase", "password.common", "password.strength", "confirm.match",
        ], "the presets' requirement ids and their order are unchanged")
    }

    func testTheShippedExampleDeclaresATermsBoxAndAStoredDisplayName() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/examples/policy-terms.yaml").path
        let policy = try PolicyFile.load(path: path)
        XCTAssertEqual(policy.fields.map(\.name), ["username", "display_name", "email", "password", "confirm", "terms"])
        let rules = FormPolicy(policy)
        XCTAssertEqual(rules.requirements(for: SignupField(rawValue: "terms")).map(\.id), ["terms.accepted"])
        XCTAssertEqual(rules.requirements(for: SignupField(rawValue: "display_name")).map(\.id), ["display_name.length"])
        let terms = try XCTUnwrap(policy.fields.last)
        XCTAssertTrue(terms.isStored)
        XCTAssertEqual(terms.linkURL, "https://example.org/terms")
    }

    func testABadDeclarationNamesItsLineAndWhatIsWrong() {
        XCTAssertEqual(refusal(builtIn + "\n  - name: nick\n    kind: textarea\n    label: Nick"),
                       "policy.yaml:7: unknown kind 'textarea' for field 'nick'; a field may be text, checkbox, select")
        XCTAssertEqual(refusal(builtIn + "\n  - name: email"), "policy.yaml:6: field 'email' is declared twice")
        expectRefusal(builtIn + "\n  - name: token\n    kind: text\n    label: T",
                      startsWith: "policy.yaml:6: field name 'token' is reserved")
        expectRefusal(builtIn + "\n  - name: Nick\n    kind: text\n    label: N",
                      startsWith: "policy.yaml:6: field name 'Nick' must be 1 to 32 lower-case letters")
        expectRefusal(builtIn + "\n  - name: code_id\n    kind: text\n    label: C\n    pattern: \"[A-Z\"\n    texts: {pattern.text: a, pattern.message: b}",
                      startsWith: "policy.yaml:9: 'fields.code_id.pattern' does not compile as a regular expression: expected ']'")
        // It compiles alone but not anchored to the whole value, as the rule uses it: refused,
        // where before the field's pattern rule was silently left out.
        for pattern in [#"abc\Q"#, #"(?x)[a-z]+ # letters"#] {
            expectRefusal(builtIn + "\n  - name: code_id\n    kind: text\n    label: C\n    pattern: '\(pattern)'\n    texts: {pattern.text: a, pattern.message: b}",
                          startsWith: "policy.yaml:9: 'fields.code_id.pattern' does not compile as a regular expression: it does not compile once anchored")
        }
        expectRefusal(builtIn + "\n  - name: terms\n    kind: checkbox\n    label: T\n    min_length: 3",
                      startsWith: "policy.yaml:9: 'min_length' does not fit a checkbox field ('terms')")
        expectRefusal(builtIn + "\n  - name: terms\n    kind: checkbox\n    label: T\n    required: true",
                      containing: "(a box that must be ticked uses 'accepted: true')")
        expectRefusal(builtIn + "\n  - name: team\n    kind: select\n    label: Team\n    accepted: true\n    options: [a]",
                      startsWith: "policy.yaml:9: 'accepted' does not fit a select field ('team')")
        expectRefusal(builtIn + "\n  - name: team\n    kind: select\n    label: Team",
                      startsWith: "policy.yaml:6: the select field 'team' needs 'options'")
        expectRefusal(builtIn + "\n  - name: nick\n    kind: text",
                      startsWith: "policy.yaml:6: field 'nick' needs a 'label'")
        expectRefusal(builtIn + "\n  - name: badge\n    kind: text\n    label: Badge\n    pattern: \"[0-9]+\"",
                      containing: "so its 'texts' must say what it asks for: give 'pattern.text'")
        expectRefusal(builtIn + "\n  - name: terms\n    kind: checkbox\n    label: I accept\n    link_url: https://example.org/terms",
                      containing: "must put the linked words in [brackets]")
        expectRefusal("  - name: username\n  - name: password\n  - name: confirm",
                      startsWith: "policy.yaml:2: 'fields' must list the built-in fields every account needs: email is missing")
        expectRefusal(builtIn.replacingOccurrences(of: "- name: email", with: "- name: email\n    min_length: 3"),
                      containing: "'min_length' does not fit the built-in field 'email'")
        expectRefusal(builtIn + "\n  - name: nick\n    kind: text\n    label: \"{name}\"",
                      containing: "uses {name}, which it cannot fill in")
        expectRefusal(builtIn + "\n  - name: nick\n    kind: text\n    label: N\n    min_length: 9\n    max_length: 3",
                      containing: "'fields.nick.max_length' (3) is below 'fields.nick.min_length' (9)")
    }

    // MARK: Rules

    func testADeclaredTextsRequirementsAndMessagesInPriorityOrder() throws {
        let policy = FormPolicy(try parse(builtIn + """

              - name: badge
                kind: text
                label: Badge number
                required: true
                min_length: 4
                max_length: 7
                pattern: "[A-Z]{2}-[0-9]+"
                texts:
                  pattern.text: Like AB-12
                  pattern.message: "{label} looks like AB-12"
            """), strengthEstimator: LengthStrengthEstimator())
        let badge = SignupField(rawValue: "badge")
        let rules = try XCTUnwrap(policy.formField(badge)?.rules)
        XCTAssertEqual(rules.requirements.map(\.id), ["badge.required", "badge.length", "badge.pattern"])
        XCTAssertEqual(rules.requirements.map(\.text), ["Required", "4 to 7 characters", "Like AB-12"])
        func message(_ value: String) -> String { rules.validation(of: rules.evaluate(value), isShown: true).message }
        XCTAssertEqual(message(""), "Badge number is required")
        XCTAssertEqual(message("   "), "Badge number is required", "spaces are not an answer")
        XCTAssertEqual(message("AB"), "Badge number must be at least 4 characters")
        XCTAssertEqual(message("AB-12345"), "Badge number must be at most 7 characters")
        XCTAssertEqual(message("ab-12"), "Badge number looks like AB-12")
        XCTAssertEqual(message("XAB-12"), "Badge number looks like AB-12", "the pattern must match the whole value")
        XCTAssertEqual(message("AB-12\n"), "Badge number can't contain line breaks or other control characters")
        XCTAssertEqual(message("AB-12"), "")
    }

    func testAnOptionalTextLeftEmptyPassesAndACheckboxCountsOnlyTicks() throws {
        let policy = FormPolicy(try parse(builtIn + """

              - name: nick
                kind: text
                label: Nickname
                max_length: 10
              - name: news
                kind: checkbox
                label: Send me news
              - name: terms
                kind: checkbox
                label: I accept
                accepted: true
            """), strengthEstimator: LengthStrengthEstimator())
        let nick = try XCTUnwrap(policy.formField(SignupField(rawValue: "nick"))?.rules)
        XCTAssertTrue(nick.allMet(by: ""))
        XCTAssertFalse(nick.allMet(by: String(repeating: "é", count: 11)))
        XCTAssertTrue(nick.allMet(by: String(repeating: "e\u{301}", count: 10)), "code points after NFC")
        XCTAssertEqual(policy.requirements(for: SignupField(rawValue: "news")), [], "an opt-in has no requirement")
        let terms = try XCTUnwrap(policy.formField(SignupField(rawValue: "terms"))?.rules)
        for ticked in ["on", "true", "1"] { XCTAssertTrue(terms.allMet(by: ticked), ticked) }
        for unticked in ["", "off", "no", "0"] { XCTAssertFalse(terms.allMet(by: unticked), unticked) }
    }

    func testFieldTextsFollowTheLanguageWithTheGeneralOnesAsFallback() throws {
        var german = PolicyTexts.builtIn
        german = PolicyTexts([.fieldRequiredText: "Pflichtangabe", .fieldRequiredMessage: "{label} ist erforderlich"]).over(german)
        let settings = try parse(builtIn + """

              - name: company
                kind: text
                label: Company
                required: true
                texts_by_language:
                  de:
                    label: Firma
              - name: city
                kind: text
                label: City
                required: true
            """)
        let policy = FormPolicy(settings, strengthEstimator: LengthStrengthEstimator()).localized(german, language: "de")
        let company = try XCTUnwrap(policy.formField(SignupField(rawValue: "company")))
        XCTAssertEqual(company.label, "Firma")
        XCTAssertEqual(company.rules?.validation(of: company.rules!.evaluate(""), isShown: true).message, "Firma ist erforderlich")
        let city = try XCTUnwrap(policy.formField(SignupField(rawValue: "city")))
        XCTAssertEqual(city.label, "City", "no German label: the file's own")
        XCTAssertEqual(city.rules?.requirements.map(\.text), ["Pflichtangabe"])
    }

    func testAStoredCheckboxRecordsWhenAndWhichTermsWereAccepted() throws {
        var terms = FieldDeclaration(name: "terms", kind: .checkbox)
        terms.mustBeAccepted = true
        terms.isStored = true
        terms.linkURL = "https://example.org/terms"
        let date = Date(timeIntervalSince1970: 1_795_000_000)
        XCTAssertEqual(DeclaredFieldRules.profileEntries(for: terms, value: "on", at: date), [
            "terms": .bool(true), "terms_url": .string("https://example.org/terms"),
            "terms_accepted_at": .string("2026-11-18T11:06:40Z"),
        ])
        XCTAssertEqual(DeclaredFieldRules.profileEntries(for: terms, value: "", at: date), ["terms": .bool(false)])
        var nick = FieldDeclaration(name: "nick", kind: .text)
        XCTAssertEqual(DeclaredFieldRules.profileEntries(for: nick, value: "Ada", at: date), [:], "not stored")
        nick.isStored = true
        XCTAssertEqual(DeclaredFieldRules.profileEntries(for: nick, value: "Ada", at: date), ["nick": .string("Ada")])
        XCTAssertEqual(DeclaredFieldRules.profileEntries(for: nick, value: "  ", at: date), [:], "nothing typed, nothing kept")
        XCTAssertEqual(ProfileValue.profile(fromJSON: ProfileValue.json(["a": .bool(true), "b": .string("x\"y")])),
                       ["a": .bool(true), "b": .string("x\"y")])
    }

    // MARK: The view model over any number of fields

    func testTheViewModelHasOneInputPerFieldAndSubmitWaitsForEveryDeclaredOne() throws {
        let policy = FormPolicy(try parse(builtIn + """

              - name: team
                kind: select
                label: Team
                required: true
                options: [red, blue]
              - name: badge
                kind: text
                label: Badge
                required: true
              - name: terms
                kind: checkbox
                label: I accept
                accepted: true
            """), strengthEstimator: LengthStrengthEstimator())
        let scheduler = DispatchQueue.test
        let checker = FakeAvailabilityChecker()
        let model = SignupViewModel(policy: policy, availabilityChecker: checker, scheduler: scheduler.eraseToAnyScheduler())
        XCTAssertEqual(model.inputs.map(\.field.rawValue), ["username", "email", "password", "confirm", "team", "badge", "terms"])
        var published: [Bool] = []
        let subscription = model.$form.sink { published.append($0.isValid) }
        defer { subscription.cancel() }

        model.username = "alice_01"
        model.email = "alice@example.com"
        model.password = "Correct-Horse7"
        model.confirm = "Correct-Horse7"
        scheduler.advance(by: .milliseconds(300))
        checker.answerLatest(with: .met)
        scheduler.advance()
        XCTAssertFalse(model.isSubmitEnabled, "the declared fields are still missing")
        XCTAssertEqual(model.requirementStates["team.required"], .unmet)

        let team = SignupField(rawValue: "team"), badge = SignupField(rawValue: "badge"), terms = SignupField(rawValue: "terms")
        model.setValue("red", for: team)
        model.setValue("B-7", for: badge)
        XCTAssertFalse(model.isSubmitEnabled)
        model.touchedFields.insert(terms)
        XCTAssertEqual(model.fieldValidations[terms], .invalid(reason: "Tick this box to continue"))
        model.setValue("on", for: terms)
        XCTAssertEqual(model.requirementStates["terms.accepted"], .met)
        XCTAssertTrue(model.isSubmitEnabled)
        XCTAssertEqual(published.last, true)
        XCTAssertEqual(published.filter { $0 }.count, 1, "enabled once, never flickering on the way")

        model.setValue("green", for: team)
        XCTAssertFalse(model.isSubmitEnabled, "a value that is not an option is refused")
        model.submitAttempted = true
        XCTAssertEqual(model.form.problems.map(\.field), [team])
        XCTAssertEqual(model.form.snapshot(rev: 1).messages.keys.sorted(),
                       ["badge", "confirm", "email", "password", "team", "terms", "username"])
    }

    func testAProfileTheStoreCannotReadIsKeptWholeNotShownEmpty() {
        XCTAssertEqual(ProfileValue.profile(fromJSON: #"{"display_name":"Ada","terms":true}"#),
                       ["display_name": .string("Ada"), "terms": .bool(true)])
        XCTAssertEqual(ProfileValue.profile(fromJSON: "{}"), [:])
        XCTAssertEqual(ProfileValue.profile(fromJSON: #"{"age":42}"#), ["unreadable": .string(#"{"age":42}"#)],
                       "edited by hand into something else: kept, said so")
    }
}
