import Foundation
import OutsideDNS
import SignupLookups

extension FuzzTarget {
    /// Have I Been Pwned's range answer (`SUFFIX:COUNT` lines), as fetched.
    static let pwnedRange = FuzzTarget(
        name: "pwned-range",
        summary: "Pwned Passwords range answers: PwnedPasswordsRangeAPI.parse"
    ) { input in
        guard let counts = PwnedPasswordsRangeAPI.parse(Data(input.bytes)) else { return }
        let lines = input.bytes.split(separator: UInt8(ascii: "\n")).count
        fuzzCheck(counts.count <= lines, "more entries than lines")
        for (suffix, count) in counts {
            fuzzCheck(suffix.utf8.count == 35 && suffix.utf8.allSatisfy { (48...57).contains($0) || (65...70).contains($0) },
                      "a key that is not 35 upper-case hex digits: \(suffix)")
            fuzzCheck(count > 0, "a count of \(count) kept")
        }
        // Line endings are the answer's to choose: CRLF reads as LF.
        let crlf = input.bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .map { $0.last == UInt8(ascii: "\r") ? Array($0) : Array($0) + [UInt8(ascii: "\r")] }
        let again = PwnedPasswordsRangeAPI.parse(Data(crlf.joined(separator: [UInt8(ascii: "\n")])))
        fuzzCheck(again == counts, "the answer reads differently with CRLF line endings")
    }

    /// A DNS answer as c-ares hands it over (the raw message), read for MX, A and AAAA.
    static let dnsAnswer = FuzzTarget(
        name: "dns-answer",
        summary: "DNS answers: c-ares's parsers, then CAresMailDomainResolver.readMX and hasAddress"
    ) { input in
        input.bytes.withUnsafeBufferPointer { buffer in
            let length = Int32(clamping: buffer.count)
            let reading = CAresMailDomainResolver.readMX(buffer.baseAddress, length)
            if case .verdict = reading {
                fuzzCheck(buffer.count >= 12, "a verdict read from fewer bytes than a DNS header")
            }
            _ = CAresMailDomainResolver.hasAddress(buffer.baseAddress, length, v6: false)
            _ = CAresMailDomainResolver.hasAddress(buffer.baseAddress, length, v6: true)
        }
    }
}
