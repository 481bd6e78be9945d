import SignupDomain
import SignupWire
import XCTest

/// A candidate keeps its parts behind one shared reference (issue 24), so its equality is
/// written by hand. The evaluation cache and `removeDuplicates` compare candidates: equal
/// must mean equal parts, whichever instances hold them.
final class PasswordCandidateTests: XCTestCase {
    private let policy = FormPolicy(.classic)

    func testCandidatesMadeApartFromTheSameInputsAreEqual() {
        let first = policy.passwordCandidate(password: "Abcdefgh-472", username: "ada", email: "ada@example.com")
        let second = policy.passwordCandidate(password: "Abcdefgh-472", username: "ada", email: "ada@example.com")
        XCTAssertEqual(first, second)
    }

    func testEachPartCounts() {
        let context = policy.contextWords(username: "ada", email: "ada@example.com")
        let base = PasswordCandidate(password: "Abcdefgh-472", context: context, strength: PasswordStrength(score: 3))
        XCTAssertNotEqual(base, PasswordCandidate(password: "Abcdefgh-473", context: context, strength: base.strength),
                          "another password")
        XCTAssertNotEqual(base, PasswordCandidate(password: base.password,
                                                  context: policy.contextWords(username: "grace", email: "grace@example.com"),
                                                  strength: base.strength),
                          "other details")
        XCTAssertNotEqual(base, PasswordCandidate(password: base.password, context: context, strength: PasswordStrength(score: 2)),
                          "another strength")
        XCTAssertEqual(base, PasswordCandidate(password: base.password, context: context, strength: base.strength))
    }
}
