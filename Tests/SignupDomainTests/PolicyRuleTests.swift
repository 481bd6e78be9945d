import ReactiveValidation
import SignupDomain
import XCTest

/// Every requirement of both policies flips exactly where docs/PROTOCOL.md says.
final class PolicyRuleTests: XCTestCase {
    private let policy = FormPolicy(.classic)
    private let nist = FormPolicy(.nist)

    private func rule<Value>(_ id: String, in rules: FieldRules<Value>,
                             file: StaticString = #filePath, line: UInt = #line) -> Rule<Value>? {
        let rule = rules.rules.first { $0.id == id }
        XCTAssertNotNil(rule, "no rule \(id)", file: file, line: line)
        return rule
    }

    private func username(_ id: String, _ value: String) -> RequirementState? {
        rule(id, in: policy.username)?.state(for: value)
    }

    private func email(_ value: String) -> RequirementState? {
        rule("email.format", in: policy.email)?.state(for: value)
    }

    private func password(_ id: String, _ value: String, username: String = "", email: String = "",
                          in policy: FormPolicy? = nil) -> RequirementState? {
        let policy = policy ?? self.policy
        return rule(id, in: policy.password)?
            .state(for: policy.passwordCandidate(password: value, username: username, email: email))
    }

    private func passwordMessage(_ value: String, username: String = "", email: String = "",
                                 in policy: FormPolicy? = nil) -> String {
        let policy = policy ?? self.policy
        let candidate = policy.passwordCandidate(password: value, username: username, email: email)
        let evaluation = policy.password.evaluate(candidate)
        return policy.password.validation(of: evaluation, isShown: true).message
    }

    private func confirm(password: String, confirm: String) -> RequirementState? {
        rule("confirm.match", in: policy.confirm)?
            .state(for: PasswordConfirmation(password: password, confirm: confirm))
    }

    private func repeated(_ piece: String, _ count: Int) -> String {
        String(repeating: piece, count: count)
    }

    // MARK: The public contract

    func testClassicRequirementIdsAndTextsAreThoseOfTheProtocolInFieldOrder() {
        let expected: [(String, String)] = [
            ("username.length", "4 to 32 characters"),
            ("username.charset", "Only letters, numbers, dots, hyphens and underscores"),
            ("username.available", "Not already taken"),
            ("email.format", "A valid email address"),
            ("password.length", "At least 8 characters"),
            ("password.uppercase", "One uppercase letter"),
            ("password.common", "Not a commonly used password"),
            ("password.strength", "Strong enough"),
            ("confirm.match", "Matches the password"),
        ]
        XCTAssertEqual(policy.allRequirements.map(\.id), expected.map(\.0))
        XCTAssertEqual(policy.allRequirements.map(\.text), expected.map(\.1))
        XCTAssertEqual(policy.requirements(for: .username).map(\.id),
                       ["username.length", "username.charset", "username.available"])
    }

    func testNISTPolicyHasNoCompositionRuleAndAsksForFifteenCharacters() {
        XCTAssertEqual(nist.requirements(for: .password).map(\.id),
                       ["password.length", "password.common", "password.strength"])
        XCTAssertEqual(nist.requirements(for: .password).first?.text, "At least 15 characters")
        XCTAssertEqual(nist.requirements(for: .username).map(\.id),
                       policy.requirements(for: .username).map(\.id), "usernames are the same under both")
    }

    func testPoliciesAreSelectedByName() {
        XCTAssertEqual(Policy.named("classic")?.name, "classic")
        XCTAssertEqual(Policy.named("NIST")?.passwordMinimumLength, 15)
        XCTAssertNil(Policy.named("lenient"))
    }

    // MARK: username.length

    func testUsernameLengthFlipsAtFourAndThirtyTwoCodePoints() {
        XCTAssertEqual(username("username.length", ""), .unmet)
        XCTAssertEqual(username("username.length", "abc"), .unmet)
        XCTAssertEqual(username("username.length", "abcd"), .met)
        XCTAssertEqual(username("username.length", repeated("a", 32)), .met)
        XCTAssertEqual(username("username.length", repeated("a", 33)), .unmet)
    }

    func testUsernameLengthCountsACombiningAccentAsOneCharacter() {
        // "e" + COMBINING ACUTE ACCENT is one code point ("é") after NFC.
        XCTAssertEqual(username("username.length", "abe\u{301}"), .unmet)
        XCTAssertEqual(username("username.length", "abce\u{301}"), .met)
        XCTAssertEqual(username("username.length", repeated("e\u{301}", 32)), .met)
        XCTAssertEqual(username("username.length", repeated("e\u{301}", 33)), .unmet)
        XCTAssertEqual(username("username.length", repeated("é", 33)), .unmet)
    }

    func testUsernameLengthCountsAnEmojiAsOneCodePoint() {
        XCTAssertEqual(username("username.length", "ab😀"), .unmet)
        XCTAssertEqual(username("username.length", "abc😀"), .met)
        XCTAssertEqual(username("username.length", repeated("a", 31) + "😀"), .met)
        XCTAssertEqual(username("username.length", repeated("a", 32) + "😀"), .unmet)
    }

    func testUsernameLengthMessageSaysWhichBoundWasMissed() {
        let length = rule("username.length", in: policy.username)
        XCTAssertEqual(length?.message("abc"), "Username must be at least 4 characters")
        XCTAssertEqual(length?.message(repeated("a", 33)), "Username must be at most 32 characters")
    }

    // MARK: username.charset

    func testUsernameCharsetAllowsLettersDigitsDotsHyphensAndUnderscores() {
        for name in ["alice", "Alice_01", "a.b-c_d", "2024", "Zoë", "José", "e\u{301}cole", "名前"] {
            XCTAssertEqual(username("username.charset", name), .met, name)
        }
    }

    func testUsernameCharsetRejectsSpacesSymbolsAndEmptiness() {
        for name in ["ali ce", "alice@home", "alice!", "al/ice", "ali+ce", "alice😀", "alice\t", ""] {
            XCTAssertEqual(username("username.charset", name), .unmet, name.debugDescription)
        }
    }

    // MARK: email.format

    func testEmailFormatAcceptsOrdinaryAddresses() {
        for address in ["name@example.com", "first.last+tag@mail.example.co.uk", "a@b.co",
                        "o'brien@example.ie", "user_1@sub-domain.example.org", "x@1.2.3.4"] {
            XCTAssertEqual(email(address), .met, address)
        }
    }

    func testEmailFormatRejectsMalformedAddresses() {
        let invalid = [
            "",
            "name",
            "name@",
            "@example.com",             // missing local part
            "name@localhost",           // no dot in the domain
            "name@.example.com",        // leading dot label
            "name@example.com.",        // trailing empty label
            "name@example..com",        // empty label
            "name@-example.com",        // label starting with a hyphen
            "name@example-.com",        // label ending with a hyphen
            "name@exa_mple.com",
            "na me@example.com",
            "name@exa mple.com",
            "na@me@example.com",
            "nämé@example.com",
        ]
        for address in invalid {
            XCTAssertEqual(email(address), .unmet, address)
        }
    }

    func testEmailFormatLengthLimits() {
        let label63 = repeated("x", 63)
        XCTAssertEqual(email("\(repeated("a", 64))@example.com"), .met)
        XCTAssertEqual(email("\(repeated("a", 65))@example.com"), .unmet, "local part over 64")
        XCTAssertEqual(email("a@\(label63).com"), .met)
        XCTAssertEqual(email("a@\(label63)x.com"), .unmet, "label over 63")
        // "a@" + 63.63.63. + 60 = 254 bytes in all.
        let domain252 = "\(label63).\(label63).\(label63).\(repeated("y", 60))"
        XCTAssertEqual(email("a@\(domain252)"), .met)
        XCTAssertEqual(email("a@\(domain252)y"), .unmet, "address over 254")
    }

    // MARK: password

    func testPasswordLengthFlipsAtEightCodePoints() {
        XCTAssertEqual(password("password.length", ""), .unmet)
        XCTAssertEqual(password("password.length", "Abcdefg"), .unmet)
        XCTAssertEqual(password("password.length", "Abcdefgh"), .met)
        XCTAssertEqual(password("password.length", "Abcdefe\u{301}"), .unmet, "7 code points after NFC")
        XCTAssertEqual(password("password.length", "Abcdefge\u{301}"), .met)
        XCTAssertEqual(password("password.length", "Abcdef😀"), .unmet)
        XCTAssertEqual(password("password.length", "Abcdefg😀"), .met)
    }

    func testPasswordUppercaseNeedsAnUppercaseLetter() {
        XCTAssertEqual(password("password.uppercase", ""), .unmet)
        XCTAssertEqual(password("password.uppercase", "correct horse 7!"), .unmet)
        XCTAssertEqual(password("password.uppercase", "12345678!?"), .unmet)
        XCTAssertEqual(password("password.uppercase", "correct Horse"), .met)
        XCTAssertEqual(password("password.uppercase", "correct horsÉ"), .met)
    }

    func testNISTPasswordLengthFlipsAtFifteenCodePointsAndAcceptsLongOnes() {
        XCTAssertEqual(password("password.length", repeated("a", 14), in: nist), .unmet)
        XCTAssertEqual(password("password.length", repeated("a", 15), in: nist), .met)
        XCTAssertEqual(password("password.length", repeated("é", 14) + "e\u{301}", in: nist), .met, "15 after NFC")
        XCTAssertEqual(password("password.length", repeated("😀", 15), in: nist), .met, "an emoji is one code point")
        XCTAssertEqual(password("password.length", repeated("😀", 14), in: nist), .unmet)
        let long = repeated("correct horse battery staple ", 30)  // 870 characters: accepted whole
        XCTAssertEqual(nist.passwordCandidate(password: long, username: "", email: "").password, long,
                       "never truncated")
        XCTAssertEqual(password("password.length", long, in: nist), .met)
    }

    func testNISTAcceptsAnyPrintableCharacterAndSpacesWithoutCompositionRules() {
        let passphrase = "lantern orbit quietly ünder 🌙 marmalade"
        XCTAssertEqual(password("password.length", passphrase, in: nist), .met)
        XCTAssertEqual(password("password.common", passphrase, in: nist), .met)
        XCTAssertEqual(passwordMessage(passphrase, in: nist).contains("uppercase"), false)
    }

    func testPasswordCommonIsCaseFoldedAndWhole() {
        for common in ["password", "Password1", "PASSWORD1", "QwErTy123", "LetMeIn", "hunter2", "trustno1",
                       "iloveyou", "Sunshine"] {
            XCTAssertEqual(password("password.common", common), .unmet, common)
            XCTAssertEqual(password("password.common", common, in: nist), .unmet, common)
        }
        XCTAssertEqual(password("password.common", ""), .unmet, "an empty password is never acceptable")
        XCTAssertEqual(password("password.common", "password grapefruit lantern"), .met, "not a substring match")
        XCTAssertEqual(password("password.common", "Correct-Horse-7"), .met)
    }

    func testTheBlocklistIsTheFullBreachList() {
        XCTAssertEqual(CommonPasswords.builtIn.count, 30_000, "zxcvbn's 30,000 passwords")
    }

    func testPasswordsBasedOnTheUsernameEmailOrSiteAreRefused() {
        let cases: [(password: String, username: String, email: String)] = [
            ("alice2024", "alice", ""),
            ("Alice2024!", "alice", ""),
            ("4l1ce-4l1ce", "alice", ""),
            ("alicealice", "alice", ""),
            ("2024Lovelace!", "ada99", "ada.lovelace@example.com"),
            ("Example123", "someone", "me@example.com"),
            ("LiveSignup1!", "someone", ""),
            ("l1v3s1gnup2025", "someone", ""),
        ]
        for (value, username, email) in cases {
            XCTAssertEqual(password("password.common", value, username: username, email: email), .unmet, value)
        }
        XCTAssertEqual(password("password.common", "alice2024", username: "bob"), .met, "only the person's own words")
        XCTAssertEqual(password("password.common", "alice-orbit-2024", username: "alice"), .met,
                       "other words beside it make it more than the name")
    }

    func testTheCommonPasswordMessageSaysWhyAndWhatToDo() {
        XCTAssertEqual(passwordMessage("Password1"),
                       "That password is on a list of commonly used passwords that attackers try first. Choose something unusual, such as a few unrelated words")
        XCTAssertTrue(passwordMessage("Alice2024!", username: "alice").contains("based on your username or email"))
        XCTAssertTrue(passwordMessage("LiveSignup1!").contains("based on this site's name"))
    }

    func testControlCharactersAndOversizedPasswordsAreRefusedWithAClearMessage() {
        for policy in [self.policy, nist] {
            for value in ["Correct\tHorse-Battery-7", "Correct\nHorse-Battery-7", "Correct\u{7}Horse-Battery-7"] {
                let candidate = policy.passwordCandidate(password: value, username: "", email: "")
                XCTAssertFalse(policy.password.allMet(by: candidate), value.debugDescription)
                XCTAssertEqual(passwordMessage(value, in: policy),
                               "Password can't contain control characters such as tabs or line breaks")
            }
            let atLimit = "Aa1-" + repeated("x", 1020)
            let overLimit = atLimit + "x"
            XCTAssertNil(policy.password.failedCheckMessage(
                for: policy.passwordCandidate(password: atLimit, username: "", email: "")), "1,024 bytes is fine")
            XCTAssertEqual(passwordMessage(overLimit, in: policy),
                           "Password is too long: use at most 1024 bytes (about 1024 Latin letters)")
            XCTAssertEqual(passwordMessage("Aa1-" + repeated("é", 511), in: policy).contains("too long"), true,
                           "counted in UTF-8 bytes: 4 + 511 × 2 = 1,026")
        }
    }

    func testPasswordStrengthNeedsScoreTwoUnderClassicAndThreeUnderNIST() {
        let strongEnough = "lantern orbit quietly"
        for (policy, minimum) in [(Policy.classic, 2), (Policy.nist, 3)] {
            for score in 0...4 {
                let rules = FormPolicy(policy, strengthEstimator: FixedScoreEstimator(score: score))
                XCTAssertEqual(password("password.strength", strongEnough, in: rules), score >= minimum ? .met : .unmet,
                               "\(policy.name), score \(score)")
            }
        }
        XCTAssertEqual(password("password.strength", ""), .unmet)
    }

    func testRealEstimatesDecideStrengthAndUseTheUsernameAsInput() {
        XCTAssertEqual(password("password.strength", "Abcdefgh1!"), .unmet, "a run with a digit and a symbol")
        XCTAssertEqual(password("password.strength", "Lantern-Orbit-Quietly-42"), .met)
        XCTAssertEqual(password("password.strength", "Lantern-Orbit-Quietly-42", in: nist), .met)
        let alone = policy.passwordCandidate(password: "Zanzibar-1987", username: "", email: "").strength.score
        let withName = policy.passwordCandidate(password: "Zanzibar-1987", username: "zanzibar", email: "").strength.score
        XCTAssertLessThan(withName, alone, "the username is a zxcvbn user input")
    }

    func testPasswordsAreComparedInNFC() {
        let composed = "Caf\u{E9}-Lantern-Orbit"
        let decomposed = "Cafe\u{301}-Lantern-Orbit"
        XCTAssertEqual(policy.passwordCandidate(password: decomposed, username: "", email: "").password, composed)
        XCTAssertEqual(confirm(password: composed, confirm: decomposed), .met)
    }

    func testPasswordRulesAreInPriorityOrder() {
        XCTAssertEqual(policy.password.rules.map(\.id),
                       ["password.length", "password.uppercase", "password.common", "password.strength"])
        XCTAssertEqual(passwordMessage("abc"), "Password must be at least 8 characters")
        XCTAssertEqual(passwordMessage("abcdefgh"), "Password must include an uppercase letter")
        XCTAssertEqual(passwordMessage("", in: nist), "Enter a password")
    }

    // MARK: confirm.match

    func testConfirmMatchIsNeverMetWhileBothAreEmpty() {
        XCTAssertEqual(confirm(password: "", confirm: ""), .unmet)
        XCTAssertEqual(confirm(password: "Abcdefgh", confirm: ""), .unmet)
        XCTAssertEqual(confirm(password: "", confirm: "Abcdefgh"), .unmet)
    }

    func testConfirmMatchIsMetExactlyWhenEqual() {
        XCTAssertEqual(confirm(password: "Abcdefgh", confirm: "Abcdefgh"), .met)
        XCTAssertEqual(confirm(password: "x", confirm: "x"), .met, "matching is independent of the password rules")
        XCTAssertEqual(confirm(password: "Abcdefgh", confirm: "Abcdefg"), .unmet)
        XCTAssertEqual(confirm(password: "Abcdefgh", confirm: "abcdefgh"), .unmet, "case matters")
        XCTAssertEqual(confirm(password: "Abcdefgh", confirm: "Abcdefgh "), .unmet)
    }
}

/// Always the same score, to test the strength threshold exactly.
private struct FixedScoreEstimator: PasswordStrengthEstimating {
    let score: Int
    func strength(of password: String, userInputs: [String]) -> PasswordStrength { PasswordStrength(score: score) }
}

/// Usernames: Unicode folding and look-alikes, under both policies.
final class UsernameRuleTests: XCTestCase {
    private func message(_ username: String, in policy: FormPolicy) -> String {
        policy.username.validation(of: policy.username.evaluate(username), isShown: true).message
    }

    func testLookAlikeAndInvisibleCharactersAreRefusedWithTheirReason() {
        for policy in [FormPolicy(.classic), FormPolicy(.nist)] {
            XCTAssertEqual(message("p\u{430}ypal", in: policy),
                           "Username can't mix letters from different alphabets, like Latin and Cyrillic")
            XCTAssertFalse(policy.username.allMet(by: "p\u{430}ypal"), "so it is never looked up either")
            XCTAssertTrue(message("ali\u{200B}ce", in: policy).contains("invisible character"))
            XCTAssertTrue(message("alice\u{202E}", in: policy).contains("changes the text direction"))
            XCTAssertEqual(message("иван", in: policy), "", "one alphabet is fine")
        }
    }

    func testCanonicalFormFoldsCaseWidthAndNormalisation() {
        XCTAssertEqual(Username.canonical("Ａｌｉｃｅ"), "alice", "full-width letters fold")
        XCTAssertEqual(Username.canonical("ALICE"), "alice")
        XCTAssertEqual(Username.canonical("Jose\u{301}"), Username.canonical("Jos\u{E9}"), "NFD and NFC are one name")
        XCTAssertEqual(Username.canonical("STRASSE"), Username.canonical("straße"), "case folding, not lower-casing")
        // ASCII takes a shortcut; it must agree with the full Unicode folding.
        let ascii = String(decoding: (0x20...0x7E).map { UInt8($0) }, as: UTF8.self)
        let unicodePath = ascii.precomposedStringWithCompatibilityMapping
            .folding(options: [.caseInsensitive], locale: nil).precomposedStringWithCompatibilityMapping
        XCTAssertEqual(Username.canonical(ascii), unicodePath)
        XCTAssertEqual("Jose\u{301}".canonicallyComposed, "Jos\u{E9}", "non-ASCII text is still composed")
        XCTAssertEqual(ascii.canonicallyComposed, ascii.precomposedStringWithCanonicalMapping)
    }

    func testReservedNamesIncludeRoutesAndTheServiceNameInAnyForm() {
        let policy = FormPolicy(.classic)
        for name in ["admin", "Administrator", "ROOT", "postmaster", "signin", "welcome", "events", "LiveSignup",
                     "ｌｉｖｅｓｉｇｎｕｐ", "www"] {
            XCTAssertTrue(policy.isReserved(name), name)
        }
        XCTAssertFalse(policy.isReserved("adminton"))
        XCTAssertFalse(policy.isReserved("alice"))
    }
}
