import Dispatch
import Foundation
import XCTest
@testable import Zxcvbn

/// The zxcvbn wrapper: scores, user inputs, feedback and Unicode handling.
final class ZxcvbnEstimatorTests: XCTestCase {
    private let estimator = ZxcvbnEstimator()

    func testKnownWeakPasswordsScoreLowAndSayWhy() {
        for password in ["password", "qwerty123", "Password1!", "letmein", "iloveyou"] {
            let estimate = estimator.estimate(password)
            XCTAssertLessThanOrEqual(estimate.score, 1, password)
            XCTAssertFalse(estimate.feedback.warning.isEmpty, password)
            XCTAssertEqual(estimate.feedback.suggestions.first, FeedbackWriter.addWords, password)
        }
        XCTAssertEqual(estimator.estimate("password").feedback.warning, "advice.top_10")
    }

    func testLongRandomAndPassphrasePasswordsScoreFourWithNoFeedback() {
        for password in ["x7#Qm!2vLp9@Rz4&Wn8K", "lantern orbit quietly marmalade", "Vq8-zebra-Tulip-41-crank"] {
            let estimate = estimator.estimate(password)
            XCTAssertEqual(estimate.score, 4, password)
            XCTAssertEqual(estimate.feedback, .none, password)
        }
    }

    func testUserInputsLowerTheScore() {
        let password = "alice2024alice"
        let alone = estimator.estimate(password)
        let withName = estimator.estimate(password, userInputs: ["Alice"])
        XCTAssertLessThan(withName.guessesLog10, alone.guessesLog10)
        XCTAssertLessThanOrEqual(withName.score, 1)
        XCTAssertTrue(withName.matches.contains { $0.kind == .userInput && $0.token == "alice" })
        XCTAssertEqual(withName.feedback.warning, "advice.own_details")
    }

    func testEachKindOfWeaknessHasItsWarning() {
        let cases: [(String, String)] = [
            ("zxcvbnm,./", "advice.keyboard"),
            ("kkkkkkkkkk", "advice.repeated_characters"),
            ("lmnopqrstu", "advice.runs"),
            ("12/05/1990", "advice.dates"),
            ("jennifer", "advice.name_alone"),
            ("p4ssw0rd", "advice.close_to_common"),
            ("mountainous", "advice.single_word"),
        ]
        for (password, warning) in cases {
            let estimate = estimator.estimate(password)
            XCTAssertLessThanOrEqual(estimate.score, 2, password)
            XCTAssertEqual(estimate.feedback.warning, warning, "\(password): \(estimate.matches)")
        }
        XCTAssertTrue(estimator.estimate("p4ssw0rd").feedback.suggestions
            .contains("advice.look_alikes"))
        XCTAssertTrue(estimator.estimate("Mountainous").feedback.suggestions.contains("advice.capital_first"))
    }

    func testScoreThresholdsAreZxcvbns() {
        XCTAssertEqual(PasswordEstimate.score(guessesLog10: 2.99), 0)
        XCTAssertEqual(PasswordEstimate.score(guessesLog10: 3.0), 0, "10^3 guesses is still below 10^3 + 5")
        XCTAssertEqual(PasswordEstimate.score(guessesLog10: 3.01), 1)
        XCTAssertEqual(PasswordEstimate.score(guessesLog10: 6.01), 2)
        XCTAssertEqual(PasswordEstimate.score(guessesLog10: 8.01), 3)
        XCTAssertEqual(PasswordEstimate.score(guessesLog10: 10.0), 3)
        XCTAssertEqual(PasswordEstimate.score(guessesLog10: 10.01), 4)
    }

    func testUnicodePasswordsAreMatchedInWholeCharacters() {
        let estimate = estimator.estimate("café123")
        XCTAssertEqual(estimate.matches.map(\.token).joined(), "café123", "tokens cover the password exactly")
        for password in ["🔥🔥🔥🔥🔥🔥", "e\u{301}te\u{301}-soleil-42", "日本語のパスワード", ""] {
            let estimate = estimator.estimate(password)
            XCTAssertTrue((0...4).contains(estimate.score), password)
        }
        XCTAssertEqual(estimator.estimate("").score, 0)
    }

    func testOnlyTheFirst64BytesAreAnalysedSoCraftedLongInputStaysCheap() {
        let crafted = String(repeating: "e3", count: 500)
        XCTAssertEqual(estimator.estimate(crafted), estimator.estimate(String(repeating: "e3", count: 32)))
        XCTAssertEqual(ZxcvbnEstimator.analysedPart(of: String(repeating: "é", count: 40)).utf8.count, 64,
                       "cut between whole characters")
        XCTAssertEqual(ZxcvbnEstimator.analysedPart(of: "a" + String(repeating: "é", count: 40)).utf8.count, 63)
        XCTAssertEqual(estimator.estimate(String(repeating: "lantern orbit quietly ", count: 20)).score, 4)
    }

    func testConcurrentEstimatesAgreeWithSerialOnes() {
        let passwords = (0..<64).map { "Tulip-\($0)-orbit-\($0 * 7)" } + ["password", "zxcvbnm", "12/05/1990"]
        let serial = passwords.map { estimator.estimate($0, userInputs: ["tulip"]) }
        let results = Results(count: passwords.count)
        DispatchQueue.concurrentPerform(iterations: passwords.count) { index in
            results.set(index, ZxcvbnEstimator().estimate(passwords[index], userInputs: ["tulip"]))
        }
        XCTAssertEqual(results.all, serial)
    }

    private final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [PasswordEstimate?]
        init(count: Int) { values = Array(repeating: nil, count: count) }
        func set(_ index: Int, _ value: PasswordEstimate) { lock.withLock { values[index] = value } }
        var all: [PasswordEstimate] { lock.withLock { values.compactMap { $0 } } }
    }
}
