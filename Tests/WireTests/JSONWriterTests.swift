import FormWire
import Foundation
import SignupWire
import XCTest

/// The events' hand-written JSON is byte for byte what `JSONEncoder` (sorted keys, slashes
/// unescaped) writes, for every event shape and for strings with anything in them.
final class JSONWriterTests: XCTestCase {
    /// Strings that stress escaping: quotes, backslashes, every control character, slashes,
    /// non-ASCII, emoji, and random mixtures of them.
    private func awkwardStrings() -> [String] {
        var strings = ["", "plain", "quote \" inside", "back\\slash", "a/b", "tab\tnew\nline\r",
                       "ünïcödé – “quotes” 😀", "\u{7F}del", "\u{2028}\u{2029}"]
        strings.append(String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) }))
        var generator = SystemRandomNumberGenerator()
        let pieces = ["\"", "\\", "/", "\n", "\u{1}", "\u{1F}", "é", "😀", "a", " ", "\u{0}", "<", "&"]
        for _ in 0..<200 {
            strings.append((0..<Int.random(in: 0...12, using: &generator))
                .map { _ in pieces.randomElement(using: &generator)! }.joined())
        }
        return strings
    }

    private struct Requirement: Encodable { let id: String; let rev: Int; let state: RequirementState }
    private struct Message: Encodable { let field: String; let rev: Int; let text: String }
    private struct Strength: Encodable { let label: String; let rev: Int; let score: Int; let suggestions: [String]; let warning: String }
    private struct Submit: Encodable { let enabled: Bool; let rev: Int }

    func testEveryEventShapeMatchesJSONEncoder() {
        for (index, text) in awkwardStrings().enumerated() {
            XCTAssertEqual(SignupEvent.requirement(id: text, state: .pending, rev: index).data,
                           WireJSON.encode(Requirement(id: text, rev: index, state: .pending)))
            XCTAssertEqual(SignupEvent.message(field: "email", text: text, rev: index).data,
                           WireJSON.encode(Message(field: "email", rev: index, text: text)))
            let strength = PasswordStrength(score: index % 5, label: text, warning: text, suggestions: [text, "x", text])
            XCTAssertEqual(SignupEvent.strength(strength, rev: index).data,
                           WireJSON.encode(Strength(label: text, rev: index, score: index % 5,
                                                    suggestions: [text, "x", text], warning: text)))
        }
        XCTAssertEqual(SignupEvent.submit(enabled: true, rev: 7).data, WireJSON.encode(Submit(enabled: true, rev: 7)))
        XCTAssertEqual(SignupEvent.submit(enabled: false, rev: 0).data, WireJSON.encode(Submit(enabled: false, rev: 0)))
    }

    func testProofOfWorkChallengeMatchesItsCodableEncoding() {
        for (index, text) in awkwardStrings().enumerated() {
            let challenge = ProofOfWorkChallenge(algorithm: "SHA-256", challenge: text, maxnumber: index * 997 - 50,
                                                 salt: text + "?expires=1&form=ab/cd&cost=5&", signature: text)
            XCTAssertEqual(challenge.json, WireJSON.encode(challenge))
        }
    }

    func testEditReceiptMatchesItsCodableEncoding() {
        for receipt in [EditReceipt(rev: 0, applied: false), EditReceipt(rev: 123_456, applied: true),
                        EditReceipt(rev: Int.max, applied: false), EditReceipt(rev: -7, applied: true)] {
            XCTAssertEqual(receipt.json, WireJSON.encode(receipt))
            XCTAssertEqual(receipt.jsonBytes, Array(WireJSON.encode(receipt).utf8))
        }
    }

    func testSnapshotMatchesItsCodableEncoding() {
        for text in awkwardStrings().prefix(60) {
            let snapshot = SignupSnapshot(
                rev: 12,
                requirements: ["username.length": .met, "password.strength": .unmet, "username.available": .pending],
                messages: ["username": text, "email": "", "password": "Too short", "confirm": text],
                strength: PasswordStrength(score: 2, label: "Fair", warning: text, suggestions: [text]),
                submitEnabled: false)
            XCTAssertEqual(SignupEvent.snapshot(snapshot).data, WireJSON.encode(snapshot))
            // And it reads back as the same snapshot.
            let decoded = try? JSONDecoder().decode(SignupSnapshot.self, from: Data(SignupEvent.snapshot(snapshot).data.utf8))
            XCTAssertEqual(decoded, snapshot)
        }
    }
}
