import SignupDomain
import XCTest

/// The forms about an existing account judge only the fields they have: a new address its
/// address alone (with the sign-up form's checks), a new password its password fields.
final class AccountFormPolicyTests: XCTestCase {
    private let account = FormPolicy.AccountContext(username: "ada", email: "ada@example.org")

    func testANewAddressFormJudgesTheAddressAlone() {
        let policy = FormPolicy(.classic).newEmail(for: account)
        XCTAssertEqual(policy.fieldOrder, [.email])
        let bad = policy.evaluateSubmission(values: [.email: "not-an-address"], usernameAvailability: .met)
        XCTAssertFalse(bad.isValid, "\(bad.requirementStates)")
        XCTAssertEqual(bad.problems.map(\.field), [.email], "\(bad.problems)")
        let good = policy.evaluateSubmission(values: [.email: "ada.lovelace@example.org"], usernameAvailability: .met)
        XCTAssertTrue(good.isValid, "\(good.problems)")
        XCTAssertNil(good.requirementStates["password.length"], "no password on this form")
    }

    func testANewPasswordFormStillJudgesThePasswordAlone() {
        let policy = FormPolicy(.classic).newPassword(for: account)
        let good = policy.evaluateSubmission(values: [.password: "Harbour-Compass-77", .confirm: "Harbour-Compass-77"],
                                             usernameAvailability: .unmet, notCurrent: .met)
        XCTAssertTrue(good.isValid, "\(good.problems) \(good.requirementStates)")
        let bad = policy.evaluateSubmission(values: [.password: "Harbour-Compass-77", .confirm: "other"],
                                            usernameAvailability: .met, notCurrent: .met)
        XCTAssertFalse(bad.isValid)
    }
}
