import Dispatch
import Foundation
@testable import UsernameSafety
import XCTest

/// ICU's spoof checker as the sign-up form uses it.
final class UsernameSafetyCheckerTests: XCTestCase {
    private let checker = UsernameSafetyChecker()

    func testOrdinaryNamesPass() {
        for name in ["alice", "Ada_Lovelace", "john.doe-42", "", "José", "Zoë"] {
            XCTAssertNil(checker.problem(in: name), name)
        }
    }

    /// Plain ASCII skips ICU; this holds only because ICU itself passes every ASCII
    /// character, alone and among letters and digits.
    func testICUPassesEveryASCIICharacterAsTheShortcutAssumes() {
        for value in 1..<0x80 {
            let character = String(UnicodeScalar(UInt8(value)))
            for name in [character, "a\(character)1", "Ab\(character)\(character)9z", "0\(character)"] {
                XCTAssertNil(checker.icuProblem(in: name), "ICU refuses \(name.debugDescription)")
                XCTAssertNil(checker.problem(in: name), name.debugDescription)
            }
        }
        XCTAssertEqual(checker.problem(in: "paypal\u{430}"), .mixedScripts, "one non-ASCII letter goes to ICU")
    }

    func testSingleScriptNamesInOtherAlphabetsPass() {
        for name in ["иван", "αλέξης", "たなか太郎", "محمد", "김민준", "ｔａｎａｋａ"] {
            XCTAssertNil(checker.problem(in: name), name)
        }
    }

    func testLatinWithAScriptThatHasNoLatinLookAlikesPasses() {
        XCTAssertNil(checker.problem(in: "tanaka太郎"))
    }

    func testLookAlikeLettersFromAnotherAlphabetAreRefused() {
        XCTAssertEqual(checker.problem(in: "p\u{430}ypal"), .mixedScripts, "Cyrillic а")
        XCTAssertEqual(checker.problem(in: "p\u{3B1}ypal"), .mixedScripts, "Greek α")
        XCTAssertEqual(checker.problem(in: "ivan\u{438}"), .mixedScripts)
    }

    func testInvisibleCharactersAreRefused() {
        for (name, scalar) in [("zero-width space", "\u{200B}"), ("zero-width joiner", "\u{200D}"),
                               ("soft hyphen", "\u{AD}"), ("variation selector", "\u{FE0F}"),
                               ("word joiner", "\u{2060}")] {
            XCTAssertEqual(checker.problem(in: "ali" + scalar + "ce"), .invisibleCharacter, name)
        }
    }

    func testBidiControlsAreRefused() {
        for scalar in ["\u{202E}", "\u{2066}", "\u{200F}", "\u{061C}"] {
            XCTAssertEqual(checker.problem(in: "alice" + scalar + "moc"), .bidiControl, scalar.unicodeScalars.first!.debugDescription)
        }
    }

    func testMixedDigitSystemsAreRefused() {
        XCTAssertEqual(checker.problem(in: "user1\u{661}"), .mixedNumbers, "Latin 1 and Arabic-Indic ١")
    }

    /// Each problem names its own sentence; the words are the catalogs' (SignupDomain's
    /// en.yaml, checked there to have every key).
    func testEveryProblemNamesItsOwnSentence() {
        let problems: [UsernameSafetyProblem] = [.invisibleCharacter, .bidiControl, .mixedScripts, .mixedNumbers]
        XCTAssertEqual(UsernameSafetyProblem.mixedScripts.textKey, "username.unsafe.mixed_scripts")
        XCTAssertEqual(Set(problems.map(\.textKey)).count, problems.count)
        XCTAssertTrue(problems.allSatisfy { $0.textKey.hasPrefix("username.unsafe.") })
    }

    /// An emoji is no look-alike: the username's own rule decides whether it may stand. One
    /// joined from several by zero-width joiners carries invisible characters, and says so;
    /// neither kind upsets the skeleton.
    func testEmojiAreNoLookAlikesButTheirInvisibleJoinersAreRefused() {
        XCTAssertNil(checker.problem(in: "alice😀"))
        XCTAssertEqual(checker.problem(in: "👨\u{200D}👩\u{200D}👧"), .invisibleCharacter)
        XCTAssertEqual(checker.skeleton(of: "alice😀"), checker.skeleton(of: "alice") + "😀")
    }

    func testLookAlikesShareASkeleton() {
        XCTAssertEqual(checker.skeleton(of: "p\u{430}ypal"), checker.skeleton(of: "paypal"))
        XCTAssertNotEqual(checker.skeleton(of: "paypal"), checker.skeleton(of: "paypai"))
        let long = String(repeating: "\u{FB03}", count: 50)  // "ﬃ" expands to three letters
        XCTAssertEqual(checker.skeleton(of: long), checker.skeleton(of: String(repeating: "ffi", count: 50)))
    }

    func testConcurrentChecksAgreeWithSerialOnes() {
        let names = (0..<200).map { $0 % 2 == 0 ? "user\($0)" : "p\u{430}ypal\($0)" }
        let serial = names.map { checker.problem(in: $0) }
        let results = Results(count: names.count)
        DispatchQueue.concurrentPerform(iterations: names.count) { index in
            results.set(index, UsernameSafetyChecker().problem(in: names[index]))
        }
        XCTAssertEqual(results.all, serial)
    }

    func testSystemICUAndFoundationsOwnICUWorkSideBySide() {
        // Foundation's Unicode work runs on its bundled ICU; the checker on the system one.
        XCTAssertEqual("Straße".uppercased(), "STRASSE")
        XCTAssertEqual("Ａｌｉｃｅ".precomposedStringWithCompatibilityMapping, "Alice")
        XCTAssertEqual(checker.problem(in: "p\u{430}ypal"), .mixedScripts)
        XCTAssertEqual("ÉCOLE".folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil), "ecole")
    }

    private final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [UsernameSafetyProblem??]
        init(count: Int) { values = Array(repeating: nil, count: count) }
        func set(_ index: Int, _ value: UsernameSafetyProblem?) { lock.withLock { values[index] = .some(value) } }
        var all: [UsernameSafetyProblem?] { lock.withLock { values.map { $0 ?? nil } } }
    }
}
