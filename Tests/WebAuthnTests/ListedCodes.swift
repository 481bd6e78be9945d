import WebAuthn
import XCTest

/// A refusal's code, checked to be in `WebAuthnError.codes`: the metric's labels come from
/// that list, so a code missing from it would be refused but never counted.
func listed(_ error: WebAuthnError, file: StaticString = #filePath, line: UInt = #line) -> String {
    XCTAssertTrue(WebAuthnError.codes.contains(error.code), "'\(error.code)' is not in WebAuthnError.codes", file: file, line: line)
    return error.code
}
