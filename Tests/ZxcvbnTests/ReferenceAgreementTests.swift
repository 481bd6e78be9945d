import Foundation
import XCTest
import Zxcvbn

/// Differential test: our zxcvbn (zxcvbn-c) against the reference Python zxcvbn 4.5.0 on a
/// generated corpus of ~2,900 passwords (Reference/generate-reference.py). The two ports use
/// different dictionaries and models, so exact agreement is not expected; the floors below
/// are what was measured, minus a little, so a regression in the wrapper shows.
final class ReferenceAgreementTests: XCTestCase {
    func testScoresAgreeWithThePythonReference() throws {
        let url = try XCTUnwrap(Bundle.module.url(forResource: "reference-scores", withExtension: "tsv"))
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        XCTAssertGreaterThan(lines.count, 2_500)

        let estimator = ZxcvbnEstimator()
        var confusion = Array(repeating: Array(repeating: 0, count: 5), count: 5)
        var exact = 0, withinOne = 0
        for line in lines {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            let reference = try XCTUnwrap(Int(fields[1]))
            let ours = estimator.estimate(String(fields[0])).score
            confusion[reference][ours] += 1
            if ours == reference { exact += 1 }
            if abs(ours - reference) <= 1 { withinOne += 1 }
        }
        let total = Double(lines.count)
        let exactRate = Double(exact) / total, withinOneRate = Double(withinOne) / total
        print(String(format: "zxcvbn agreement with Python zxcvbn 4.5.0 on %d passwords: exact %.1f %%, within one %.1f %%",
                     lines.count, exactRate * 100, withinOneRate * 100))
        print("rows: Python score, columns: ours")
        for (score, row) in confusion.enumerated() {
            print("  \(score): " + row.map { String(format: "%5d", $0) }.joined())
        }
        XCTAssertGreaterThanOrEqual(exactRate, Self.exactFloor)
        XCTAssertGreaterThanOrEqual(withinOneRate, Self.withinOneFloor)
    }

    // Measured 2026-11-22: exact 73.4 %, within one 94.1 % (see docs/ZXCVBN.md).
    static let exactFloor = 0.71
    static let withinOneFloor = 0.92
}
