import Foundation
import SignupDomain
import XCTest

/// Issue 44's codes: RFC 6238's own test vectors, and codes `oathtool` (OATH Toolkit, not our
/// code) computes from the same key at the same moments; the window of one step either side;
/// a clock further off said as such; base32 and the otpauth URI as apps read them.
final class TOTPTests: XCTestCase {
    /// RFC 6238 Appendix B, HMAC-SHA-1, key "12345678901234567890", 8 digits.
    func testTheRFCsVectors() {
        let totp = TOTP(secret: Array("12345678901234567890".utf8))
        let vectors: [(Int64, String)] = [(59, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"),
                                          (1_234_567_890, "89005924"), (2_000_000_000, "69279037"),
                                          (20_000_000_000, "65353130")]
        for (time, code) in vectors {
            XCTAssertEqual(totp.code(atStep: time / 30, digits: 8), code, "T = \(time)")
        }
        XCTAssertEqual(totp.code(atStep: 59 / 30), "287082", "six digits: the last six")
    }

    /// The same key in `oathtool --totp` gives the same code at every moment asked.
    func testCodesAgreeWithOathtool() throws {
        let tool = URL(fileURLWithPath: "/usr/bin/oathtool")
        guard FileManager.default.fileExists(atPath: tool.path) else {
            return XCTFail("oathtool is not installed (make test-deps installs it)")
        }
        let totp = TOTP(secret: TOTP.makeSecret())
        for moment in [0, 59, 1_700_000_000, 1_800_000_017, 2_000_000_000] {
            let process = Process()
            process.executableURL = tool
            process.arguments = ["--totp", "--base32", "--now", "@\(moment)", Base32.encode(totp.secret)]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            process.waitUntilExit()
            let code = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertEqual(totp.code(atStep: TOTP.step(at: Date(timeIntervalSince1970: TimeInterval(moment)))), code, "@\(moment)")
        }
    }

    func testOneStepEitherSideIsAcceptedFurtherIsAClockOffAndElseWrong() {
        let totp = TOTP(secret: TOTP.makeSecret())
        let now = Date(timeIntervalSince1970: 1_800_000_015)
        let step = TOTP.step(at: now)
        XCTAssertEqual(totp.match(totp.code(atStep: step), at: now), .accepted(step: step))
        XCTAssertEqual(totp.match(totp.code(atStep: step - 1), at: now), .accepted(step: step - 1))
        XCTAssertEqual(totp.match(" " + totp.code(atStep: step + 1).prefix(3) + " " + totp.code(atStep: step + 1).suffix(3), at: now),
                       .accepted(step: step + 1), "spaces ignored")
        XCTAssertEqual(totp.match(totp.code(atStep: step + 4), at: now), .clockOff(step: step + 4, seconds: 120), "two minutes ahead")
        XCTAssertEqual(totp.match(totp.code(atStep: step - 2), at: now), .clockOff(step: step - 2, seconds: -60))
        XCTAssertEqual(totp.match(totp.code(atStep: step + 40), at: now), .wrong, "twenty minutes off is just wrong")
        XCTAssertEqual(totp.match("12345", at: now), .wrong)
        XCTAssertEqual(totp.match("１２３４５６", at: now), .wrong, "ASCII digits only")
    }

    func testBase32AndTheURIAreWhatAppsRead() {
        XCTAssertEqual(Base32.encode(Array("foobar".utf8)), "MZXW6YTBOI", "RFC 4648 §10")
        XCTAssertEqual(Base32.decode("mzxw 6ytb oi=="), Array("foobar".utf8))
        XCTAssertNil(Base32.decode("MZXW1"), "1 is not base32")
        let totp = TOTP(secret: Array("12345678901234567890".utf8))
        XCTAssertEqual(totp.typedKey, "GEZD GNBV GY3T QOJQ GEZD GNBV GY3T QOJQ")
        XCTAssertEqual(totp.uri(issuer: "Example Co", account: "ada"),
                       "otpauth://totp/Example%20Co:ada?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Example%20Co"
                       + "&algorithm=SHA1&digits=6&period=30")
    }
}
