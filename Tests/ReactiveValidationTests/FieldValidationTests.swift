import ReactiveValidation
import XCTest

/// `FieldValidation.decide`: what a person is told about one field, and when.
final class FieldValidationTests: XCTestCase {
    private typealias Outcome = (state: RequirementState, message: String)

    private func decide(
        _ outcomes: [Outcome],
        emptyMessage: String? = "Enter a value",
        isEmpty: Bool = false,
        isShown: Bool = true
    ) -> FieldValidation {
        FieldValidation.decide(outcomes: outcomes, emptyMessage: emptyMessage, isEmpty: isEmpty, isShown: isShown)
    }

    func testIsIdleUntilTheFieldMayBeShownWhateverItsState() {
        XCTAssertEqual(decide([(.unmet, "Too short")], isShown: false), .idle)
        XCTAssertEqual(decide([(.unmet, "Too short")], isEmpty: true, isShown: false), .idle)
        XCTAssertEqual(decide([(.pending, "Taken")], isShown: false), .idle)
        XCTAssertEqual(decide([(.met, "Too short")], isShown: false), .idle)
        XCTAssertEqual(FieldValidation.idle.message, "")
    }

    func testAnEmptyFieldSaysWhatToEnterBeforeAnyRuleMessage() {
        let verdict = decide([(.unmet, "Too short"), (.unmet, "Bad characters")], isEmpty: true)
        XCTAssertEqual(verdict, .invalid(reason: "Enter a value"))
        XCTAssertEqual(verdict.message, "Enter a value")
    }

    func testAnEmptyFieldWithoutAnEmptyMessageFallsBackToTheFirstUnmetRule() {
        let verdict = decide([(.met, "A"), (.unmet, "Too short")], emptyMessage: nil, isEmpty: true)
        XCTAssertEqual(verdict, .invalid(reason: "Too short"))
    }

    func testTheFirstUnmetRuleInPriorityOrderIsTheMessage() {
        XCTAssertEqual(decide([(.unmet, "First"), (.unmet, "Second"), (.unmet, "Third")]).message, "First")
        XCTAssertEqual(decide([(.met, "First"), (.unmet, "Second"), (.unmet, "Third")]).message, "Second")
        XCTAssertEqual(decide([(.met, "First"), (.met, "Second"), (.unmet, "Third")]),
                       .invalid(reason: "Third"))
    }

    func testPendingIsPendingWithNoMessage() {
        let verdict = decide([(.met, "Too short"), (.met, "Bad characters"), (.pending, "Taken")])
        XCTAssertEqual(verdict, .pending)
        XCTAssertEqual(verdict.message, "")
    }

    func testAnEarlierUnmetRuleOutranksALaterPendingOneAndViceVersa() {
        XCTAssertEqual(decide([(.unmet, "Too short"), (.pending, "Taken")]), .invalid(reason: "Too short"))
        XCTAssertEqual(decide([(.pending, "Taken"), (.unmet, "Too short")]), .pending)
    }

    func testAllMetIsValidWithNoMessage() {
        let verdict = decide([(.met, "Too short"), (.met, "Bad characters"), (.met, "Taken")])
        XCTAssertEqual(verdict, .valid)
        XCTAssertEqual(verdict.message, "")
    }

    func testAFieldWithNoRulesIsValidOnceShownAndNotEmpty() {
        XCTAssertEqual(decide([]), .valid)
        XCTAssertEqual(decide([], isEmpty: true), .invalid(reason: "Enter a value"))
    }
}
