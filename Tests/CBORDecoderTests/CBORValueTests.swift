import CBORDecoder
import Foundation
import HTTPTestSupport
import XCTest

/// libcbor through our Swift face, checked against the examples of RFC 8949 Appendix A
/// (the standard's own encodings), and hostile input refused cheaply with a reason.
final class CBORValueTests: XCTestCase {
    private func decode(_ hex: String) throws -> CBORValue {
        try CBORValue.decode(bytes(hex))
    }

    private func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    func testTheStandardsIntegerExamples() throws {
        XCTAssertEqual(try decode("00"), .unsigned(0))
        XCTAssertEqual(try decode("17"), .unsigned(23))
        XCTAssertEqual(try decode("1818"), .unsigned(24))
        XCTAssertEqual(try decode("1903e8"), .unsigned(1000))
        XCTAssertEqual(try decode("1a000f4240"), .unsigned(1_000_000))
        XCTAssertEqual(try decode("1bffffffffffffffff"), .unsigned(18_446_744_073_709_551_615))
        XCTAssertEqual(try decode("20"), .negative(0))
        XCTAssertEqual(try decode("20").int, -1)
        XCTAssertEqual(try decode("3863").int, -100)
        XCTAssertEqual(try decode("3903e7").int, -1000)
        XCTAssertEqual(try decode("26").int, -7, "ES256's COSE algorithm number")
    }

    func testTheStandardsStringsArraysMapsAndTags() throws {
        XCTAssertEqual(try decode("40"), .bytes([]))
        XCTAssertEqual(try decode("4401020304"), .bytes([1, 2, 3, 4]))
        XCTAssertEqual(try decode("6161"), .text("a"))
        XCTAssertEqual(try decode("62c3bc"), .text("ü"))
        XCTAssertEqual(try decode("8301820203820405"), .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])]))
        let map = try decode("a201020304")
        XCTAssertEqual(map[1], .unsigned(2))
        XCTAssertEqual(map[3], .unsigned(4))
        XCTAssertEqual(try decode("a26161016162820203")["b"], .array([.unsigned(2), .unsigned(3)]))
        XCTAssertEqual(try decode("c11a514b67b0"), .tagged(1, .unsigned(1_363_896_240)))
        XCTAssertEqual(try decode("5f42010243030405ff"), .bytes([1, 2, 3, 4, 5]), "indefinite length, in chunks")
        XCTAssertEqual(try decode("7f657374726561646d696e67ff"), .text("streaming"))
        XCTAssertEqual(try decode("9fff"), .array([]))
        XCTAssertEqual(try decode("f4"), .bool(false))
        XCTAssertEqual(try decode("f5"), .bool(true))
        XCTAssertEqual(try decode("f6"), .null)
        XCTAssertEqual(try decode("f7"), .undefined)
        XCTAssertEqual(try decode("f93c00"), .float(1.0))
        XCTAssertEqual(try decode("fb3ff199999999999a"), .float(1.1))
    }

    func testAPrefixSaysHowManyBytesItTook() throws {
        let (value, length) = try CBORValue.decodePrefix(bytes("a10102" + "a16378797a01"))
        XCTAssertEqual(value[1], .unsigned(2))
        XCTAssertEqual(length, 3, "the extensions after a COSE key are not part of it")
        XCTAssertThrowsError(try CBORValue.decode(bytes("a10102ff"))) { error in
            XCTAssertEqual("\(error)", "1 bytes follow the data item")
        }
    }

    func testBrokenOrHostileInputIsRefusedWithAReason() {
        func reason(_ hex: String, limits: CBORLimits = CBORLimits()) -> String {
            do {
                _ = try CBORValue.decode(bytes(hex), limits: limits)
                return "accepted"
            } catch {
                return error.reason
            }
        }
        XCTAssertTrue(reason("").contains("no data"))
        XCTAssertTrue(reason("5820000102").contains("cut short"), reason("5820000102"))
        XCTAssertTrue(reason("a2010203").contains("cut short"), "a map missing a value")
        XCTAssertTrue(reason("1c").contains("well-formed"), reason("1c"))
        // libcbor refuses a text string that is not UTF-8 itself; the check here would too.
        XCTAssertNotEqual(reason("62c328"), "accepted", "a text string that is not UTF-8")
        XCTAssertEqual(reason(String(repeating: "81", count: 20) + "00"), "nested deeper than 16")
        XCTAssertEqual(reason("84" + "01020304", limits: CBORLimits(maximumItems: 3)), "more than 3 items")
        XCTAssertEqual(reason(String(repeating: "00", count: 40), limits: CBORLimits(maximumBytes: 32)),
                       "40 bytes; at most 32 are read")
    }

    /// Declared lengths that the bytes cannot hold are refused before libcbor reads them:
    /// libcbor 0.8 allocates and zero-fills a container's declared length at its header, so
    /// `9a 08000000` alone used to cost a GiB. The process's peak RSS (reset through
    /// /proc/self/clear_refs before each input) must stay within a few MiB.
    func testDeclaredLengthsBeyondTheBytesSentAreRefusedWithoutAllocating() throws {
        let hostile: [(String, String)] = [
            ("9a08000000", "cut short"),                                  // an array of 2^27 items, in 5 bytes
            ("9b0000000100000000", "cut short"),                          // 2^32 items
            ("ba08000000", "cut short"),                                  // a map of 2^27 pairs
            ("bb00000000ffffffff", "cut short"),                          // 2^32 pairs
            ("5a7fffffff", "cut short"),                                  // a byte string of 2 GiB
            ("7a7fffffff", "cut short"),                                  // a text string of 2 GiB
            ("5f5a7fffffffff", "cut short"),                              // the same as an indefinite string's chunk
            ("83" + String(repeating: "9a00100000", count: 3), "cut short"), // nested headers, each a million
            ("a1019a08000000", "cut short"),                              // a COSE-shaped map holding one
            ("9f" + String(repeating: "9a08000000", count: 1), "cut short"), // inside an indefinite array
            ("9f" + String(repeating: "9f", count: 20), "nested deeper than 16"), // indefinite nesting
            ("9f" + String(repeating: "00", count: 3000) + "ff", "more than 2048 items"),
            ("d8189a08000000", "cut short"),                              // behind a tag
        ]
        for (hex, expected) in hostile {
            let growth = try PeakMemory.growth {
                XCTAssertThrowsError(try CBORValue.decode(bytes(hex)), hex) { error in
                    XCTAssertTrue("\(error)".contains(expected), "\(hex): \(error)")
                }
            }
            XCTAssertLessThan(growth, 4 * 1024, "\(hex) raised the peak RSS by \(growth) KiB")
        }
    }

    /// The walk refuses what RFC 8949 Appendix C calls not well-formed, and lets the standard's
    /// own awkward examples through (indefinite lengths, tags, simple values).
    func testTheWalkAgreesWithTheStandardOnWellFormedness() throws {
        for hex in ["1c", "5f01ff", "5f5f4101ffff", "ff", "9f01", "bf01ff", "f818", "3f", "df00"] {
            XCTAssertThrowsError(try CBORValue.decode(bytes(hex)), "\(hex) is not well-formed")
        }
        XCTAssertEqual(try decode("9f018202039f0405ffff"),
                       .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])]))
        XCTAssertEqual(try decode("bf61610161629f0203ffff")["b"], .array([.unsigned(2), .unsigned(3)]))
        XCTAssertEqual(try decode("c11a514b67b0"), .tagged(1, .unsigned(1_363_896_240)))
        XCTAssertEqual(try decode("8a" + "0102030405060708090a"), .array((1...10).map { .unsigned(UInt64($0)) }),
                       "a declared length exactly the bytes left is taken")
    }
}
