import ReactiveValidation
import SignupDomain
import XCTest

/// Every requirement of `SignupPolicy.classic()` flips exactly where docs/PROTOCOL.md says.
final class ClassicPolicyRuleTests: XCTestCase {
    private let policy = SignupPolicy.classic()

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

    private func password(_ id: String, _ value: String) -> RequirementState? {
        rule(id, in: policy.password)?.state(for: value)
    }

    private func confirm(password: String, confirm: String) -> RequirementState? {
        rule("confirm.match", in: policy.confirm)?
            .state(for: PasswordConfirmation(password: password, confirm: confirm))
    }

    private func repeated(_ piece: String, _ count: Int) -> String {
        String(repeating: piece, count: count)
    }

    // MARK: The public contract

    func testRequirementIdsAndTextsAreThoseOfTheProtocolInFieldOrder() {
        let expected: [(String, String)] = [
            ("username.length", "4 to 32 characters"),
            ("username.charset", "Only letters, numbers, dots, hyphens and underscores"),
            ("username.available", "Not already taken"),
            ("email.format", "A valid email address"),
            ("password.length", "At least 8 characters"),
            ("password.uppercase", "One uppercase letter"),
            ("password.common", "Not a commonly used password"),
            ("confirm.match", "Matches the password"),
        ]
        XCTAssertEqual(policy.allRequirements.map(\.id), expected.map(\.0))
        XCTAssertEqual(policy.allRequirements.map(\.text), expected.map(\.1))
        XCTAssertEqual(policy.requirements(for: .username).map(\.id),
                       ["username.length", "username.charset", "username.available"])
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

    func testPasswordCommonIsCaseFolded() {
        for common in ["password", "Password1", "PASSWORD1", "QwErTy123", "LetMeIn", "hunter2"] {
            XCTAssertEqual(password("password.common", common), .unmet, common)
        }
        XCTAssertEqual(password("password.common", ""), .unmet, "an empty password is never acceptable")
        XCTAssertEqual(password("password.common", "Password1!x"), .met)
        XCTAssertEqual(password("password.common", "Correct-Horse-7"), .met)
    }

    func testPasswordRulesAreInPriorityOrder() {
        XCTAssertEqual(policy.password.rules.map(\.id),
                       ["password.length", "password.uppercase", "password.common"])
        XCTAssertEqual(policy.password.rules.map { $0.message("x") }, [
            "Password must be at least 8 characters",
            "Password must include an uppercase letter",
            "That password is too common. Choose one that is harder to guess",
        ])
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
