import Foundation
import XCTest
@testable import Zxcvbn

/// The feedback's word lists, read once (`WordLists.prepare`, called by every estimator).
final class WordListsTests: XCTestCase {
    /// The module's own files, as the repository holds them.
    private static let resources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/Zxcvbn/Resources")

    /// Each list holds every line of its file, in order, nothing split or merged: the loader
    /// splits bytes, and this reads the same file line by line as text.
    func testTheListsHoldEveryLineOfTheirFilesInOrder() throws {
        func lines(of name: String) throws -> [String] {
            try String(contentsOf: Self.resources.appendingPathComponent("\(name).txt"), encoding: .utf8)
                .components(separatedBy: "\n").filter { !$0.isEmpty }
        }
        XCTAssertEqual(WordLists.commonPasswords, try lines(of: "passwords"))
        XCTAssertEqual(WordLists.names, Set(try lines(of: "names")))
        XCTAssertEqual(WordLists.commonPasswords.count, 30_000)
        XCTAssertEqual(WordLists.commonPasswords.prefix(3), ["123456", "password", "12345678"])
        XCTAssertEqual(WordLists.passwordRanks["password"], 2)
        XCTAssertTrue(WordLists.names.contains("warman"))
    }

    /// The advice that needs the lists (a name, a ranked common password) is the same after
    /// `prepare` as on first use.
    func testAdviceFromTheListsAfterPreparing() {
        WordLists.prepare()
        let estimator = ZxcvbnEstimator()
        XCTAssertEqual(estimator.estimate("password").feedback.warning, "advice.top_10")
        XCTAssertFalse(estimator.estimate("jennifer").feedback.warning.isEmpty)
    }
}
