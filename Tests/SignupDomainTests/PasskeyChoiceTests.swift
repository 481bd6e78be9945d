import SignupDomain
import SignupWire
import XCTest

/// A passkey instead of a password: the evaluation swaps the password's checklist for
/// `passkey.created`, and the form is ready exactly when everything else is and the passkey exists.
final class PasskeyChoiceTests: XCTestCase {
    private let policy = FormPolicy(.classic)
    private let values: [SignupField: String] = [.username: "ada_keys", .email: "ada@example.org"]

    func testThePasskeyTakesThePasswordsPlaceInTheChecklist() {
        let waiting = policy.evaluateSubmission(values: values, usernameAvailability: .met,
                                                credential: CredentialChoice(method: .passkey))
        XCTAssertEqual(waiting.credential, .passkey)
        XCTAssertEqual(waiting.requirementStates["passkey.created"], .unmet)
        XCTAssertFalse(waiting.requirementStates.keys.contains { $0.hasPrefix("password.") || $0.hasPrefix("confirm.") })
        XCTAssertFalse(waiting.isValid)
        XCTAssertEqual(waiting.problems.map(\.field), [.passkey], "only the missing passkey, none of the empty passwords")
        XCTAssertEqual(waiting.problems.first?.message, "Create a passkey for this site, or use a password instead")
        XCTAssertEqual(waiting.fieldOrder, [.username, .email, .passkey])

        let made = policy.evaluateSubmission(values: values, usernameAvailability: .met,
                                             credential: CredentialChoice(method: .passkey, passkeyCreated: true))
        XCTAssertTrue(made.isValid)
        XCTAssertEqual(made.requirementStates["passkey.created"], .met)
        XCTAssertEqual(made.snapshot(rev: 3).credential, .passkey)

        let taken = policy.evaluateSubmission(values: values, usernameAvailability: .unmet,
                                              credential: CredentialChoice(method: .passkey, passkeyCreated: true))
        XCTAssertFalse(taken.isValid, "the other fields are judged as always")
    }

    func testAPasswordChoiceIgnoresAPasskeyMadeOnTheForm() {
        let evaluation = policy.evaluateSubmission(values: values, usernameAvailability: .met,
                                                   credential: CredentialChoice(method: .password, passkeyCreated: true))
        XCTAssertFalse(evaluation.isValid, "with a password chosen, the password is needed")
        XCTAssertNil(evaluation.requirementStates["passkey.created"])
        XCTAssertEqual(evaluation.requirementStates["password.length"], .unmet)
    }

    func testEventsGoInPageOrderWithThePasskeyAfterThePasswords() {
        let order = policy.liveRequirementOrder
        XCTAssertEqual(order.firstIndex(of: "passkey.created"), order.firstIndex(of: "confirm.match").map { $0 + 1 })
        XCTAssertEqual(policy.liveFieldOrder, [.username, .email, .password, .confirm, .passkey])
        let before = policy.initialEvaluation.snapshot(rev: 0)
        let after = policy.evaluateSubmission(values: values, usernameAvailability: .met,
                                              credential: CredentialChoice(method: .passkey)).snapshot(rev: 1)
        let events = after.changes(since: before, requirementOrder: order, fieldOrder: policy.liveFieldOrder.map(\.rawValue))
        XCTAssertEqual(events.first, .credential(.passkey, rev: 1), "the checklist swaps before its states arrive")
    }
}
