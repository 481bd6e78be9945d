import Foundation
import SignupDomain
import XCTest

/// The Pwned Passwords file searched in place: found lines give their count, absent hashes
/// 0, at the edges of the file too; a file that is not `SHA1:COUNT` lines is refused at once.
final class BreachedPasswordsTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-pwned-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Lines like the real download: upper-case hash, colon, count, CRLF, sorted by hash.
    private func writeFile(_ entries: [(hash: String, count: Int)], name: String = "pwned.txt") throws -> String {
        let text = entries.sorted { $0.hash < $1.hash }.map { "\($0.hash):\($0.count)\r\n" }.joined()
        let url = directory.appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    private func randomHash() -> String {
        (0..<20).map { _ in String(format: "%02X", UInt8.random(in: 0...255)) }.joined()
    }

    func testSHA1IsTheCorpusKey() {
        XCTAssertEqual(BreachedPasswords.sha1(of: "password"), "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8")
        XCTAssertEqual(BreachedPasswords.sha1(of: "e\u{301}t\u{e9}"), BreachedPasswords.sha1(of: "\u{e9}t\u{e9}"),
                       "NFC first, as every other password rule")
    }

    func testEveryLineIsFoundWithItsCountAndAbsentHashesAreNot() throws {
        var entries = (0..<3000).map { index in (hash: randomHash(), count: index + 1) }
        entries.append((BreachedPasswords.sha1(of: "password"), 10_434_004))
        entries.append((String(repeating: "0", count: 40), 7))  // the very first line
        entries.append((String(repeating: "F", count: 40), 9))  // the very last line
        let file = try PwnedPasswordsFile(path: try writeFile(entries))
        for entry in entries {
            XCTAssertEqual(try file.timesSeen(sha1: entry.hash), entry.count, entry.hash)
        }
        XCTAssertEqual(try file.timesSeen(sha1: BreachedPasswords.sha1(of: "password").lowercased()), 10_434_004,
                       "lower-case hashes are looked up too")
        let present = Set(entries.map(\.hash))
        for _ in 0..<500 {
            let absent = randomHash()
            if !present.contains(absent) { XCTAssertEqual(try file.timesSeen(sha1: absent), 0, absent) }
        }
    }

    func testTinyFiles() throws {
        let one = try PwnedPasswordsFile(path: try writeFile([(String(repeating: "A", count: 40), 3)], name: "one.txt"))
        XCTAssertEqual(try one.timesSeen(sha1: String(repeating: "A", count: 40)), 3)
        XCTAssertEqual(try one.timesSeen(sha1: String(repeating: "B", count: 40)), 0)
        XCTAssertEqual(try one.timesSeen(sha1: String(repeating: "0", count: 40)), 0)
        let empty = try PwnedPasswordsFile(path: try writeFile([], name: "empty.txt"))
        XCTAssertEqual(try empty.timesSeen(sha1: String(repeating: "A", count: 40)), 0)
    }

    func testAFileThatIsNotPwnedPasswordsIsRefusedAtOnce() throws {
        let url = directory.appendingPathComponent("words.txt")
        try "password\n123456\n".write(to: url, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try PwnedPasswordsFile(path: url.path)) { error in
            XCTAssertTrue("\(error)".contains("does not start with a 'SHA1:COUNT' line"), "\(error)")
        }
        XCTAssertThrowsError(try PwnedPasswordsFile(path: directory.appendingPathComponent("absent.txt").path)) { error in
            XCTAssertTrue("\(error)".contains("cannot be read: No such file or directory"), "\(error)")
        }
        XCTAssertThrowsError(try PwnedPasswordsFile(path: directory.path)) { error in
            XCTAssertTrue("\(error)".contains("is not a regular file"), "\(error)")
        }
    }
}
