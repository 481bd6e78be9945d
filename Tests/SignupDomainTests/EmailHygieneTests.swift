import CombineSchedulers
import Clocks
import Foundation
import OutsideDNS
import ReactiveValidation
import SignupDomain
import SignupLookups
import XCTest
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
import Locking
#endif

/// Live email hygiene in the domain: "Did you mean …?" for likely typos, throwaway domains
/// refused when the policy lists them, and "can receive mail" answered from DNS through the
/// same debounced, latest-only pipeline as the username check, failing open.
final class EmailHygieneTests: XCTestCase {
    // MARK: Suggestions

    func testCommonTyposAreCorrectedAndTheLocalPartIsKeptAsTyped() {
        let suggester = EmailDomainSuggester.builtIn
        XCTAssertEqual(suggester.suggestion(for: "ada@gmial.com"), "ada@gmail.com", "two letters swapped")
        XCTAssertEqual(suggester.suggestion(for: "ada@hotmial.com"), "ada@hotmail.com")
        XCTAssertEqual(suggester.suggestion(for: "ada@yahooo.com"), "ada@yahoo.com", "a letter too many")
        XCTAssertEqual(suggester.suggestion(for: "ada@gmail.con"), "ada@gmail.com", "a top-level domain that does not exist")
        XCTAssertEqual(suggester.suggestion(for: "ada@gmail.co"), "ada@gmail.com", "cut short")
        XCTAssertEqual(suggester.suggestion(for: "ada@gmial.con"), "ada@gmail.com", "both at once")
        XCTAssertEqual(suggester.suggestion(for: "Ada.Lovelace+news@GMIAL.com"), "Ada.Lovelace+news@gmail.com")
        XCTAssertEqual(suggester.suggestion(for: "ada@example.con"), "ada@example.com",
                       "any name under a misspelt top-level domain")
    }

    func testIntendedDomainsGetNoSuggestion() {
        let suggester = EmailDomainSuggester.builtIn
        for address in ["ada@gmail.com", "ada@example.org", "ada@university.edu", "ada@gmx.at", "ada@hotmail.fr",
                        "ada@mail.com", "ada@email.com", "ada@ymail.com", "not an address", "ada@gmial", ""] {
            XCTAssertNil(suggester.suggestion(for: address), address)
        }
        XCTAssertNil(EmailDomainSuggester(commonDomains: []).suggestion(for: "ada@gmial.com"), "an empty list turns them off")
    }

    func testEditDistanceCountsASwapOfNeighboursAsOneSlip() {
        func distance(_ a: String, _ b: String) -> Int? {
            EmailDomainSuggester.editDistance(a, b, limit: 3)
        }
        XCTAssertEqual(distance("gmial.com", "gmail.com"), 1)
        XCTAssertEqual(distance("yahooo.com", "yahoo.com"), 1)
        XCTAssertEqual(distance("gmx.de", "gmx.at"), 2)
        XCTAssertEqual(distance("", "abc"), 3)
        XCTAssertNil(distance("outlook.com", "gmail.com"), "past the limit")
    }

    func testSuggestionsShowWithTheFieldsProblemsAndNeverBlockTheForm() {
        let policy = FormPolicy(.classic, strengthEstimator: LengthStrengthEstimator())
        let values: [SignupField: String] = [.username: "ada_l", .email: "ada@gmial.com",
                                             .password: "Lantern-Orbit-42", .confirm: "Lantern-Orbit-42"]
        let typing = policy.evaluateSubmission(values: values, usernameAvailability: .met)
        XCTAssertEqual(typing.suggestions, [.email: "ada@gmail.com"])
        XCTAssertTrue(typing.isValid, "a suggestion is not a problem")
        XCTAssertEqual(typing.snapshot(rev: 3).suggestions, ["email": "ada@gmail.com"])
        let unshown = policy.evaluate(values: values, availability: policy.usernameAvailabilityRule { _ in
            Just(.met).eraseToAnyPublisher()
        }, answer: nil, shownFields: [])
        XCTAssertEqual(unshown.suggestions, [:], "not while the person is still in the field")
    }

    // MARK: Throwaway domains

    func testAListedDomainAndItsSubdomainsAreThrowawayButNotLookAlikes() {
        let list = DisposableEmailDomains(["Mailinator.com", "  throwaway.test.  ", ""])
        XCTAssertEqual(list.count, 2)
        XCTAssertTrue(list.contains(address: "ada@mailinator.com"))
        XCTAssertTrue(list.contains(address: "ada@X.Mailinator.COM"), "subdomains, any case")
        XCTAssertTrue(list.contains(address: "ada@throwaway.test"))
        XCTAssertFalse(list.contains(address: "ada@notmailinator.com"), "only whole labels")
        XCTAssertFalse(list.contains(address: "ada@mailinator.com.example.org"))
        XCTAssertFalse(list.contains(address: "ada@example.org"))
    }

    func testThePolicyFileNamesTheListAndTheRequirementJoinsTheChecklist() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hygiene-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "# from disposable-email-domains\nmailinator.com\n\nguerrillamail.com\n"
            .write(to: directory.appendingPathComponent("disposable.txt"), atomically: true, encoding: .utf8)
        let settings = try PolicyFile.parse("""
            name: hygiene
            email:
              disposable_file: disposable.txt
              disposable: [tempmail.test]
              common_domains: [gmail.com, web.de]
            """, file: "p.yaml", baseDirectory: directory)
        XCTAssertEqual(settings.disposableEmailDomains?.count, 3)
        XCTAssertEqual(settings.emailSuggestions.commonDomains, ["gmail.com", "web.de"])
        let policy = FormPolicy(settings, strengthEstimator: LengthStrengthEstimator())
        XCTAssertEqual(policy.requirements(for: .email).map(\.id), ["email.format", "email.disposable"])
        XCTAssertEqual(policy.requirements(for: .email).last?.text, "Not a throwaway address")
        let refused = policy.evaluateSubmission(values: [.email: "ada@sub.mailinator.com"], usernameAvailability: .met)
        XCTAssertEqual(refused.requirementStates["email.disposable"], .unmet)
        XCTAssertEqual(refused.fieldValidations[.email]?.message,
                       "That is a throwaway address. Use one you will keep, so you can always get back into your account")
        XCTAssertEqual(policy.evaluateSubmission(values: [.email: "ada@web.de"], usernameAvailability: .met)
            .requirementStates["email.disposable"], .met)
        XCTAssertFalse(FormPolicy(.classic).allRequirements.contains { $0.id == "email.disposable" },
                       "no list, no requirement")

        XCTAssertThrowsError(try PolicyFile.parse("email:\n  disposable_file: missing.txt\n", file: "p.yaml",
                                                  baseDirectory: directory)) { error in
            XCTAssertEqual((error as? PolicyFileError)?.line, 2)
            XCTAssertTrue("\(error)".contains("missing.txt cannot be read"), "\(error)")
        }
        XCTAssertThrowsError(try PolicyFile.parse("email:\n  disposables: [a.test]\n", file: "p.yaml",
                                                  baseDirectory: directory)) { error in
            XCTAssertTrue("\(error)".contains("unknown setting 'email.disposables'"), "\(error)")
        }
        XCTAssertThrowsError(try PolicyFile.parse("email:\n  common_domains: [gmail]\n", file: "p.yaml",
                                                  baseDirectory: directory)) { error in
            XCTAssertTrue("\(error)".contains("not a domain"), "\(error)")
        }
        try "mailinator.com  # the big one\n".write(to: directory.appendingPathComponent("commented.txt"), atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try PolicyFile.parse("email:\n  disposable_file: commented.txt\n", file: "p.yaml",
                                                  baseDirectory: directory)) { error in
            XCTAssertTrue("\(error)".contains("has 'mailinator.com  # the big one', which is not a domain"), "\(error)")
        }
        let off = try PolicyFile.parse("email:\n  common_domains: []\n", file: "p.yaml", baseDirectory: directory)
        XCTAssertNil(off.emailSuggestions.suggestion(for: "ada@gmial.com"))
    }

    // MARK: Can receive mail

    /// A resolver whose answers the test gives, one question at a time.
    private final class ScriptedResolver: MailDomainResolving, @unchecked Sendable {
        private let lock = NSLock()
        private var waiting: [(domain: String, completion: @Sendable (Result<MailDomainVerdict, MailDomainLookupFailure>) -> Void)] = []
        private(set) var asked: [String] = []

        func verdict(for domain: String, completion: @escaping @Sendable (Result<MailDomainVerdict, MailDomainLookupFailure>) -> Void) {
            lock.withLock {
                asked.append(domain)
                waiting.append((domain, completion))
            }
        }

        var askedSoFar: [String] { lock.withLock { asked } }

        /// Answers every waiting question about `domain`.
        func answer(_ domain: String, _ result: Result<MailDomainVerdict, MailDomainLookupFailure>) {
            let due = lock.withLock { () -> [@Sendable (Result<MailDomainVerdict, MailDomainLookupFailure>) -> Void] in
                let due = waiting.filter { $0.domain == domain }.map(\.completion)
                waiting.removeAll { $0.domain == domain }
                return due
            }
            for completion in due { completion(result) }
        }
    }

    func testVerdictsAreRememberedPerDomainFailuresAreNotAndOneQuestionServesEveryoneWaiting() {
        let resolver = ScriptedResolver()
        let clock = TestClock()
        let checker = MailDomainChecker(resolver: resolver, verdictLifetime: 60, now: { clock.now })
        let observed = Locked<[String]>([])
        checker.observeLookups { check, domain in observed.withLock { $0.append("\(domain) \(check.label)") } }
        let answers = Locked<[RequirementState]>([])
        checker.check(address: "ada@Example.org") { check in answers.withLock { $0.append(check.state) } }
        checker.check(address: "bob@example.org") { check in answers.withLock { $0.append(check.state) } }
        XCTAssertEqual(resolver.askedSoFar, ["example.org"], "one question for both")
        resolver.answer("example.org", .success(.refusesMail))
        XCTAssertEqual(answers.withLock { $0 }, [.unmet, .unmet])
        checker.check(address: "cy@example.org") { check in answers.withLock { $0.append(check.state) } }
        XCTAssertEqual(resolver.askedSoFar, ["example.org"], "remembered")
        XCTAssertEqual(answers.withLock { $0 }.count, 3)
        clock.advance(by: 61)
        checker.check(address: "cy@example.org") { _ in }
        XCTAssertEqual(resolver.askedSoFar, ["example.org", "example.org"], "asked again once forgotten")
        resolver.answer("example.org", .success(.acceptsMail))

        checker.check(address: "ada@slow.test") { check in answers.withLock { $0.append(check.state) } }
        resolver.answer("slow.test", .failure(MailDomainLookupFailure(reason: "timeout", detail: "no answer")))
        XCTAssertEqual(answers.withLock { $0 }.last, .met, "fails open")
        checker.check(address: "ada@slow.test") { _ in }
        XCTAssertEqual(resolver.askedSoFar.last, "slow.test", "a failure is not remembered")
        XCTAssertEqual(resolver.askedSoFar.filter { $0 == "slow.test" }.count, 2)
        XCTAssertEqual(observed.withLock { $0 }, ["example.org null_mx", "example.org accepts_mail", "slow.test failed"])
    }

    func testTheLiveCheckIsPendingWhileAskedAndOnlyTheLatestAddressCounts() {
        let resolver = ScriptedResolver()
        let checker = MailDomainChecker(resolver: resolver)
        let scheduler = DispatchQueue.test
        let policy = FormPolicy(.classic, strengthEstimator: LengthStrengthEstimator(), lookups: .mailDomains)
        XCTAssertEqual(policy.requirements(for: .email).map(\.id), ["email.format", "email.deliverable"])
        let model = SignupViewModel(policy: policy, availabilityChecker: FakeAvailabilityChecker(),
                                    lookups: Lookups(mailDomains: checker),
                                    scheduler: scheduler.eraseToAnyScheduler())
        model.touchedFields.insert(.email)
        model.email = "ada@example"
        scheduler.advance(by: .milliseconds(300))
        XCTAssertEqual(resolver.askedSoFar, [], "an address that fails its format is never asked about")
        XCTAssertEqual(model.requirementStates["email.deliverable"], .unmet)

        model.email = "ada@first.test"
        scheduler.advance(by: .milliseconds(300))
        XCTAssertEqual(model.requirementStates["email.deliverable"], .pending)
        model.email = "ada@second.test"
        scheduler.advance(by: .milliseconds(300))
        XCTAssertEqual(resolver.askedSoFar, ["first.test", "second.test"])
        resolver.answer("first.test", .success(.acceptsMail))
        scheduler.advance()
        XCTAssertEqual(model.requirementStates["email.deliverable"], .pending, "the answer for an older address is ignored")
        resolver.answer("second.test", .success(.noSuchDomain))
        scheduler.advance()
        XCTAssertEqual(model.requirementStates["email.deliverable"], .unmet)
        XCTAssertEqual(model.fieldValidations[.email]?.message, "second.test cannot receive mail. Check the part after the @")
        XCTAssertFalse(model.isSubmitEnabled)
    }

    func testTheSubmitCheckUsesTheSameAnswerAndRefusesUndeliverableAddresses() {
        let resolver = ScriptedResolver()
        let policy = FormPolicy(.classic, strengthEstimator: LengthStrengthEstimator(), lookups: .mailDomains)
        let lookups = Lookups(mailDomains: MailDomainChecker(resolver: resolver))
        let states = Locked<[RequirementState?]>([])
        lookups.deliverableState(for: "not an address", in: policy) { state in states.withLock { $0.append(state) } }
        lookups.deliverableState(for: "ada@gone.test", in: policy) { state in states.withLock { $0.append(state) } }
        resolver.answer("gone.test", .success(.noSuchDomain))
        XCTAssertEqual(states.withLock { $0 }, [.unmet, .unmet])
        XCTAssertEqual(resolver.askedSoFar, ["gone.test"])
        let values: [SignupField: String] = [.username: "ada_l", .email: "ada@gone.test",
                                             .password: "Lantern-Orbit-42", .confirm: "Lantern-Orbit-42"]
        XCTAssertFalse(policy.evaluateSubmission(values: values, usernameAvailability: .met, deliverable: .unmet).isValid)
        XCTAssertTrue(policy.evaluateSubmission(values: values, usernameAvailability: .met, deliverable: .met).isValid)
        lookups.deliverableState(for: "ada@gone.test", in: FormPolicy(.classic)) { state in
            states.withLock { $0.append(state) }
        }
        XCTAssertEqual(states.withLock { $0 }.last, .some(nil), "no DNS check configured: nothing to say")
    }
}

/// A value shared with callbacks from other threads.
