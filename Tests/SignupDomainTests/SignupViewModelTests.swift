import CombineSchedulers
import Foundation
import ReactiveValidation
import SignupDomain
import XCTest
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// `SignupViewModel` driven like a page: typing, leaving fields, submitting, with time and
/// availability answers under the test's control.
final class SignupViewModelTests: XCTestCase {
    private let validUsername = "alice_01"
    private let validEmail = "alice@example.com"
    private let validPassword = "Correct-Horse7"

    private func makeModel() -> (SignupViewModel, FakeAvailabilityChecker, TestSchedulerOf<DispatchQueue>) {
        let scheduler = DispatchQueue.test
        let checker = FakeAvailabilityChecker()
        let model = SignupViewModel(policy: FormPolicy(.classic, strengthEstimator: LengthStrengthEstimator()),
                                    availabilityChecker: checker,
                                    scheduler: scheduler.eraseToAnyScheduler())
        return (model, checker, scheduler)
    }

    /// Fills every field validly and answers the availability look-up with `met`.
    private func fillValidly(_ model: SignupViewModel, _ checker: FakeAvailabilityChecker,
                             _ scheduler: TestSchedulerOf<DispatchQueue>) {
        model.username = validUsername
        model.email = validEmail
        model.password = validPassword
        model.confirm = validPassword
        scheduler.advance(by: .milliseconds(300))
        checker.answerLatest(with: .met)
        scheduler.advance()
    }

    private func state(_ model: SignupViewModel, _ id: String) -> RequirementState? {
        model.requirementStates[id]
    }

    // MARK: Empty form

    func testAnEmptyFormHasEveryRequirementUnmetNoMessagesAndSubmitDisabled() {
        let (model, checker, scheduler) = makeModel()

        let ids = model.policy.allRequirements.map(\.id)
        XCTAssertEqual(ids.count, 9)
        XCTAssertEqual(Set(model.requirementStates.keys), Set(ids))
        for id in ids {
            XCTAssertEqual(model.requirementStates[id], .unmet, id)
        }
        for field in SignupField.builtIn {
            XCTAssertEqual(model.fieldValidations[field], .idle, field.rawValue)
        }
        XCTAssertFalse(model.isSubmitEnabled)
        XCTAssertEqual(model.strength, .none)

        scheduler.advance(by: .seconds(5))
        XCTAssertEqual(checker.requestedUsernames, [], "an empty name is never looked up")
        XCTAssertTrue(model.requirementStates.values.allSatisfy { $0 == .unmet })
    }

    /// A breach source that has seen no password.
    private struct NoBreaches: BreachedPasswordLookup {
        func timesSeen(sha1 hash: String) throws -> Int { 0 }
    }

    /// A view model starts as the policy's initial evaluation, made once for every form,
    /// without evaluating its empty inputs again (issue 24). That holds only if evaluating
    /// every input at its default gives that very form: typing into a field and deleting it
    /// makes the pipeline evaluate the defaults for real, and the form must be the one it
    /// started as. For both presets (with the real strength estimate), declared fields
    /// (a required box among them) and a breach source.
    func testTheFormStartsAsWhatEvaluatingTheEmptyInputsGives() throws {
        let declared = try PolicyFile.parse("""
            fields:
              - name: username
              - name: email
              - name: password
              - name: confirm
              - name: nick
                kind: text
                label: Nickname
                required: true
                min_length: 2
              - name: terms
                kind: checkbox
                label: I accept
                accepted: true
            """, file: "policy.yaml", baseDirectory: URL(fileURLWithPath: "/"))
        let breaches = BreachedPasswordChecker(lookup: NoBreaches(), run: { $0(); return true })
        let policies = Policy.all.map { FormPolicy($0) }
            + [FormPolicy(declared, strengthEstimator: LengthStrengthEstimator()),
               FormPolicy(.classic, strengthEstimator: LengthStrengthEstimator(), lookups: .breachedPasswords)]
        for policy in policies {
            let model = SignupViewModel(policy: policy, availabilityChecker: FakeAvailabilityChecker(),
                                        lookups: Lookups(breachedPasswords: breaches),
                                        scheduler: DispatchQueue.test.eraseToAnyScheduler())
            let initial = model.form
            XCTAssertEqual(initial, policy.initialEvaluation, policy.name)
            for input in model.inputs {
                input.value = "x"
                input.value = ""
                XCTAssertEqual(model.form, initial, "\(policy.name): \(input.field.rawValue) typed and deleted")
            }
        }
    }

    /// A view model that is let go takes its whole pipeline with it, the look-ups in
    /// flight included: nothing the pipeline captured (here its availability checker)
    /// outlives it. The form's output goes out through `assign(to: &$form)`, which ends the
    /// pipeline when `form`'s publisher goes; a pipeline left running would hold its
    /// operators (which hold each other) and everything they captured, once per page view.
    func testALetGoViewModelReleasesItsPipeline() {
        weak var releasedChecker: FakeAvailabilityChecker?
        weak var releasedModel: SignupViewModel?
        do {
            let scheduler = DispatchQueue.test
            let checker = FakeAvailabilityChecker()
            let model = SignupViewModel(policy: FormPolicy(.classic, strengthEstimator: LengthStrengthEstimator()),
                                        availabilityChecker: checker, scheduler: scheduler.eraseToAnyScheduler())
            model.username = "alice"
            scheduler.advance(by: .milliseconds(300))
            XCTAssertEqual(checker.requestedUsernames, ["alice"], "a look-up is in flight")
            model.username = "alice2"
            model.password = "Correct-Horse7"
            releasedChecker = checker
            releasedModel = model
        }
        XCTAssertNil(releasedModel)
        XCTAssertNil(releasedChecker, "the pipeline outlived its view model")
    }

    // MARK: Username and availability

    func testTypingAUsernameUpdatesItsRulesAtOnceAndLooksItUpAfterTheDebounce() {
        let (model, checker, scheduler) = makeModel()

        model.username = "alice"
        XCTAssertEqual(state(model, "username.length"), .met)
        XCTAssertEqual(state(model, "username.charset"), .met)
        XCTAssertEqual(state(model, "username.available"), .pending)

        scheduler.advance(by: .milliseconds(299))
        XCTAssertEqual(checker.requestedUsernames, [])
        scheduler.advance(by: .milliseconds(1))
        XCTAssertEqual(checker.requestedUsernames, ["alice"])
        XCTAssertEqual(state(model, "username.available"), .pending)

        scheduler.advance(by: .seconds(5))
        XCTAssertEqual(checker.requestedUsernames, ["alice"], "looked up exactly once")
    }

    func testAFreeUsernameBecomesMetAndValid() {
        let (model, checker, scheduler) = makeModel()
        model.username = "alice"
        model.touchedFields.insert(.username)
        XCTAssertEqual(model.fieldValidations[.username], .pending)
        XCTAssertEqual(model.fieldValidations[.username]?.message, "")

        scheduler.advance(by: .milliseconds(300))
        checker.answer(0, with: .met)
        scheduler.advance()

        XCTAssertEqual(state(model, "username.available"), .met)
        XCTAssertEqual(model.fieldValidations[.username], .valid)
    }

    func testATakenUsernameIsUnmetAndSaysSoOnceTouched() {
        let (model, checker, scheduler) = makeModel()
        model.username = "alice"
        scheduler.advance(by: .milliseconds(300))
        checker.answer(0, with: .unmet)
        scheduler.advance()

        XCTAssertEqual(state(model, "username.available"), .unmet)
        XCTAssertEqual(model.fieldValidations[.username], .idle, "not shown before the field is left")

        model.touchedFields.insert(.username)
        XCTAssertEqual(model.fieldValidations[.username], .invalid(reason: "That username is taken"))
        XCTAssertEqual(model.fieldValidations[.username]?.message, "That username is taken")
    }

    func testANameFailingItsRulesIsNeverLookedUpAndStaysUnmet() {
        let (model, checker, scheduler) = makeModel()

        for name in ["abc", "ali ce", String(repeating: "a", count: 33)] {
            model.username = name
            XCTAssertEqual(state(model, "username.available"), .unmet, name)
            scheduler.advance(by: .seconds(1))
            XCTAssertEqual(state(model, "username.available"), .unmet, name)
        }
        XCTAssertEqual(checker.requestedUsernames, [])
    }

    func testABurstOfKeystrokesCausesExactlyOneLookupForTheFinalName() {
        let (model, checker, scheduler) = makeModel()

        for prefix in ["a", "al", "ali", "alic", "alice"] {
            model.username = prefix
            scheduler.advance(by: .milliseconds(100))
        }
        scheduler.advance(by: .milliseconds(300))

        XCTAssertEqual(checker.requestedUsernames, ["alice"])
    }

    func testAStaleAvailabilityAnswerNeverWins() {
        let (model, checker, scheduler) = makeModel()

        model.username = "alice"
        scheduler.advance(by: .milliseconds(300))      // look-up 0: "alice"
        model.username = "alicia"
        scheduler.advance(by: .milliseconds(300))      // look-up 1: "alicia"
        XCTAssertEqual(checker.requestedUsernames, ["alice", "alicia"])

        checker.answer(0, with: .met)                  // the slow answer for "alice"
        scheduler.advance()
        XCTAssertEqual(state(model, "username.available"), .pending)
        XCTAssertFalse(model.isSubmitEnabled)

        checker.answer(1, with: .unmet)
        scheduler.advance()
        XCTAssertEqual(state(model, "username.available"), .unmet)
    }

    func testAStaleAnswerForTheSameNameTypedAgainNeverWins() {
        let (model, checker, scheduler) = makeModel()

        model.username = "alice"
        scheduler.advance(by: .milliseconds(300))      // look-up 0: "alice"
        model.username = "alicia"
        scheduler.advance(by: .milliseconds(300))      // look-up 1: "alicia"
        model.username = "alice"
        scheduler.advance(by: .milliseconds(300))      // look-up 2: "alice" again
        XCTAssertEqual(checker.requestedUsernames, ["alice", "alicia", "alice"])

        checker.answer(0, with: .met)                  // superseded
        scheduler.advance()
        XCTAssertEqual(state(model, "username.available"), .pending)

        checker.answer(2, with: .unmet)                // e.g. taken in the meantime
        scheduler.advance()
        XCTAssertEqual(state(model, "username.available"), .unmet)
    }

    // MARK: Messages

    func testMessagesStayHiddenUntilTheFieldIsTouched() {
        let (model, _, _) = makeModel()
        model.username = "abc"
        model.email = "alice@"
        model.password = "short"
        model.confirm = "different"

        for field in SignupField.builtIn {
            XCTAssertEqual(model.fieldValidations[field], .idle, field.rawValue)
            XCTAssertEqual(model.fieldValidations[field]?.message, "", field.rawValue)
        }
        XCTAssertEqual(state(model, "username.length"), .unmet, "requirements are live before touching")

        model.touchedFields.insert(.username)
        XCTAssertEqual(model.fieldValidations[.username]?.message, "Username must be at least 4 characters")
        XCTAssertEqual(model.fieldValidations[.email], .idle, "only the touched field speaks")
        XCTAssertEqual(model.fieldValidations[.password], .idle)
        XCTAssertEqual(model.fieldValidations[.confirm], .idle)
    }

    func testASubmitAttemptShowsEveryFieldsFirstProblem() {
        let (model, _, _) = makeModel()
        model.submitAttempted = true

        XCTAssertEqual(model.fieldValidations[.username], .invalid(reason: "Enter a username"))
        XCTAssertEqual(model.fieldValidations[.email], .invalid(reason: "Enter your email address"))
        XCTAssertEqual(model.fieldValidations[.password], .invalid(reason: "Enter a password"))
        XCTAssertEqual(model.fieldValidations[.confirm], .invalid(reason: "Confirm your password"))

        model.username = String(repeating: "a", count: 33)
        model.email = "alice@localhost"
        model.password = "Abc"
        model.confirm = "Abd"
        XCTAssertEqual(model.fieldValidations[.username]?.message, "Username must be at most 32 characters")
        XCTAssertEqual(model.fieldValidations[.email]?.message, "Enter an email address like name@example.com")
        XCTAssertEqual(model.fieldValidations[.password]?.message, "Password must be at least 8 characters")
        XCTAssertEqual(model.fieldValidations[.confirm]?.message, "Passwords don't match")
    }

    func testEachFieldShowsItsFirstUnmetRuleInPriorityOrder() {
        let (model, checker, scheduler) = makeModel()
        model.touchedFields = [.username, .email, .password, .confirm]

        XCTAssertEqual(model.fieldValidations[.password]?.message, "Enter a password")
        model.password = "longenough"
        XCTAssertEqual(model.fieldValidations[.password]?.message, "Password must include an uppercase letter")
        model.password = "Password1"
        XCTAssertEqual(model.fieldValidations[.password]?.message,
                       "That password is on a list of commonly used passwords that attackers try first. Choose something unusual, such as a few unrelated words")
        model.username = "orbit"
        model.password = "Kestrel9-orbit"
        XCTAssertEqual(model.fieldValidations[.password]?.message,
                       "This password would be easy to guess. Avoid your own details", "the estimator's advice")
        model.username = ""
        model.password = "abc"
        XCTAssertEqual(model.fieldValidations[.password]?.message, "Password must be at least 8 characters",
                       "length outranks the other password rules")
        model.password = validPassword
        XCTAssertEqual(model.fieldValidations[.password], .valid)

        model.confirm = "Correct-Horse"
        XCTAssertEqual(model.fieldValidations[.confirm]?.message, "Passwords don't match")
        model.confirm = validPassword
        XCTAssertEqual(model.fieldValidations[.confirm], .valid)
        model.password = "Correct-Horse8"
        XCTAssertEqual(model.fieldValidations[.confirm]?.message, "Passwords don't match",
                       "changing the password re-checks the confirmation")

        model.username = "ab!"
        XCTAssertEqual(model.fieldValidations[.username]?.message, "Username must be at least 4 characters")
        model.username = "ab!c"
        XCTAssertEqual(model.fieldValidations[.username]?.message,
                       "Username can only use letters, numbers, dots, hyphens and underscores")
        model.username = ""
        XCTAssertEqual(model.fieldValidations[.username]?.message, "Enter a username")

        model.email = "alice@.example.com"
        XCTAssertEqual(model.fieldValidations[.email]?.message, "Enter an email address like name@example.com")
        model.email = validEmail
        XCTAssertEqual(model.fieldValidations[.email], .valid)

        scheduler.advance(by: .seconds(1))
        XCTAssertEqual(checker.requestedUsernames, [])
    }

    // MARK: Strength

    func testStrengthFollowsThePasswordAndDecidesPasswordStrength() {
        let (model, _, _) = makeModel()
        var published: [Int] = []
        // One settled form per password edit, so one strength per edit.
        let cancellable = model.$form.sink { published.append($0.strength.score) }

        XCTAssertEqual(model.strength, PasswordStrength.none)
        model.password = "Kest"
        XCTAssertEqual(model.strength.score, 1)
        XCTAssertEqual(model.strength.label, "Weak")
        XCTAssertEqual(model.strength.warning, "Too short", "the estimator's feedback is kept")
        XCTAssertEqual(state(model, "password.strength"), .unmet)
        model.password = "Kestrel9"
        XCTAssertEqual(model.strength.label, "Fair")
        XCTAssertEqual(state(model, "password.strength"), .met, "classic asks for a score of 2")
        model.password = "Kestrel9-Lant"
        XCTAssertEqual(model.strength.label, "Good")
        model.password = "Kestrel9-Lantern"
        XCTAssertEqual(model.strength.label, "Strong")
        model.password = ""
        XCTAssertEqual(model.strength, .none)
        XCTAssertEqual(state(model, "password.strength"), .unmet)

        XCTAssertEqual(published, [0, 1, 2, 3, 4, 0], "each change is published once")
        withExtendedLifetime(cancellable) {}
    }

    func testTheUsernameAndEmailAreTheEstimatorsUserInputs() {
        let (model, _, _) = makeModel()
        model.password = "Kestrel9-Lantern"
        XCTAssertEqual(model.strength.score, 4)
        model.username = "lantern"
        XCTAssertEqual(model.strength.score, 0, "a username edit re-rates the password")
        XCTAssertEqual(state(model, "password.strength"), .unmet)
        model.username = "someone"
        model.email = "kestrel9@example.com"
        XCTAssertEqual(model.strength.score, 0, "so does the email's local part")
        XCTAssertEqual(state(model, "password.strength"), .unmet)
    }

    func testThePasswordIsEstimatedOnlyWhenItOrItsContextChanges() {
        let estimator = CountingEstimator()
        let model = SignupViewModel(policy: FormPolicy(.classic, strengthEstimator: estimator),
                                    availabilityChecker: FakeAvailabilityChecker(),
                                    scheduler: DispatchQueue.test.eraseToAnyScheduler())
        model.password = "Kestrel9-Lantern"
        XCTAssertEqual(estimator.calls, 1)
        model.confirm = "Kestrel9"
        model.confirm = "Kestrel9-Lantern"
        model.touchedFields = [.password, .confirm]
        model.submitAttempted = true
        XCTAssertEqual(estimator.calls, 1, "confirmation and visibility changes reuse the estimate")
        model.email = "kestrel@example.com"
        XCTAssertEqual(estimator.calls, 2, "the email is a user input, so it is estimated again")
        model.username = "lantern"
        XCTAssertEqual(estimator.calls, 3)
    }

    func testAPasswordBasedOnTheUsernameIsRefusedLive() {
        let (model, _, _) = makeModel()
        model.touchedFields = [.password]
        model.password = "Marguerite2024!"
        XCTAssertEqual(state(model, "password.common"), .met)
        model.username = "marguerite"
        XCTAssertEqual(state(model, "password.common"), .unmet)
        XCTAssertEqual(model.fieldValidations[.password]?.message,
                       "That password is based on your username or email, which attackers try first. Choose one that has nothing to do with them")
    }

    func testAControlCharacterKeepsSubmitDisabledThoughTheChecklistIsMet() {
        let (model, checker, scheduler) = makeModel()
        fillValidly(model, checker, scheduler)
        XCTAssertTrue(model.isSubmitEnabled)
        model.password = validPassword + "\t"
        model.confirm = validPassword + "\t"
        XCTAssertEqual(state(model, "password.length"), .met)
        XCTAssertFalse(model.isSubmitEnabled, "refused by a check off the checklist")
        model.submitAttempted = true
        XCTAssertEqual(model.fieldValidations[.password]?.message,
                       "Password can't contain control characters such as tabs or line breaks")
    }

    // MARK: Submit

    func testSubmitIsEnabledExactlyWhenEveryRequirementIsMet() {
        let (model, checker, scheduler) = makeModel()
        model.username = validUsername
        model.email = validEmail
        model.password = validPassword
        model.confirm = validPassword
        XCTAssertFalse(model.isSubmitEnabled, "availability is still pending")
        scheduler.advance(by: .milliseconds(300))
        XCTAssertFalse(model.isSubmitEnabled)

        checker.answerLatest(with: .met)
        scheduler.advance()
        XCTAssertTrue(model.requirementStates.values.allSatisfy { $0 == .met })
        XCTAssertTrue(model.isSubmitEnabled)

        let breakages: [(String, (SignupViewModel) -> Void, (SignupViewModel) -> Void)] = [
            ("username.length", { $0.username = "al" }, { $0.username = self.validUsername }),
            ("username.charset", { $0.username = "alice 01" }, { $0.username = self.validUsername }),
            ("email.format", { $0.email = "alice@example" }, { $0.email = self.validEmail }),
            ("password.length", { $0.password = "Correct" }, { $0.password = self.validPassword }),
            ("password.uppercase", { $0.password = "correct-horse7" }, { $0.password = self.validPassword }),
            ("confirm.match", { $0.confirm = "Correct-Horse" }, { $0.confirm = self.validPassword }),
        ]
        for (id, breakIt, restore) in breakages {
            breakIt(model)
            XCTAssertEqual(state(model, id), .unmet, id)
            XCTAssertFalse(model.isSubmitEnabled, "broken \(id)")
            restore(model)
            XCTAssertTrue(model.isSubmitEnabled, "restored \(id)")
        }
        XCTAssertEqual(checker.requestedUsernames, [validUsername],
                       "returning to the answered name within the debounce needs no new look-up")
    }

    func testSubmitTurnsOffWhenTheUsernameTurnsOutTaken() {
        let (model, checker, scheduler) = makeModel()
        fillValidly(model, checker, scheduler)
        XCTAssertTrue(model.isSubmitEnabled)

        model.username = "bob_the_builder"
        XCTAssertFalse(model.isSubmitEnabled, "a name being looked up is not met")
        scheduler.advance(by: .milliseconds(300))
        checker.answerLatest(with: .unmet)
        scheduler.advance()
        XCTAssertFalse(model.isSubmitEnabled)
        XCTAssertEqual(state(model, "username.available"), .unmet)
    }

    func testSubmitPublishesEachChangeOnceWithoutFlicker() {
        let (model, checker, scheduler) = makeModel()
        var published: [Bool] = []
        let cancellable = model.$form.map(\.isValid).removeDuplicates().sink { published.append($0) }

        // Edits that leave the form incomplete publish nothing new.
        for prefix in ["a", "al", "ali", "alic", "alice"] { model.username = prefix }
        model.email = "alice@"
        model.email = validEmail
        model.password = "Correct"
        model.password = validPassword
        model.confirm = "Correct"
        scheduler.advance(by: .milliseconds(300))
        checker.answerLatest(with: .met)
        scheduler.advance()
        XCTAssertEqual(published, [false])

        model.confirm = validPassword                  // now complete
        model.confirm = "Correct-Horse"                // broken
        model.confirm = "Correct-Hors"                 // still broken: no repeat
        model.email = "alice@example"                  // broken twice over: no repeat
        model.email = validEmail
        model.confirm = validPassword                  // complete again
        model.username = "alic"                        // pending look-up
        model.username = "alice"                       // the answer for "alice" is still known
        scheduler.advance(by: .milliseconds(300))
        model.password = "Correct-Horse8"              // password and confirmation both change...
        model.password = "correct"                     // ...and stay wrong
        model.password = validPassword                 // matches again

        XCTAssertEqual(published, [false, true, false, true, false, true, false, true])
        XCTAssertEqual(checker.requestedUsernames, ["alice"])
        withExtendedLifetime(cancellable) {}
    }

    /// A password edit that satisfies every password rule but breaks a matching confirmation
    /// leaves the form invalid, so submit must not switch on even for an instant.
    ///
    /// Checked on many fresh view models: `$password` feeds the password rules and the
    /// confirmation through separate subscriptions, and OpenCombine's `@Published` delivers to
    /// its subscribers in `Set` order, which differs from one object to the next.
    func testAPasswordEditThatBreaksTheConfirmationNeverEnablesSubmitEvenBriefly() {
        var flickering: [[Bool]] = []
        for _ in 0..<40 {
            let (model, checker, scheduler) = makeModel()
            model.username = validUsername
            model.email = validEmail
            model.password = "Horse7"                  // too short...
            model.confirm = "Horse7"                   // ...but confirmed
            scheduler.advance(by: .milliseconds(300))
            checker.answerLatest(with: .met)
            scheduler.advance()
            XCTAssertEqual(state(model, "password.length"), .unmet)
            XCTAssertEqual(state(model, "confirm.match"), .met)

            var published: [Bool] = []
            let cancellable = model.$form.map(\.isValid).removeDuplicates().sink { published.append($0) }
            model.password = "Horse7xy"                // every password rule met, confirmation broken

            XCTAssertEqual(state(model, "password.length"), .met)
            XCTAssertEqual(state(model, "confirm.match"), .unmet)
            XCTAssertFalse(model.isSubmitEnabled)
            if published != [false] { flickering.append(published) }
            withExtendedLifetime(cancellable) {}
        }
        XCTAssertEqual(flickering.count, 0,
                       "submit flickered on \(flickering.count) of 40 view models: \(flickering.first ?? [])")
    }
}

/// Counts estimates, to see when the view model asks for one.
private final class CountingEstimator: PasswordStrengthEstimating, @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var calls: Int { lock.withLock { count } }
    func strength(of password: String, userInputs: [String]) -> PasswordStrength {
        lock.withLock { count += 1 }
        return PasswordStrength(score: 3)
    }
}
