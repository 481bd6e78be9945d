import Foundation
@testable import Identity
@testable import SignupServer
import SignupDomain
import XCTest

/// Issue 44: a second factor's secret is sealed to its account under a key the store does not
/// hold, and recovery codes are kept as HMACs that match the code however it is typed.
final class SecondFactorSealTests: XCTestCase {
    func testASealedSecretOpensOnlyForItsAccountUnderItsKey() throws {
        let key = SecondFactorSeal.makeKey()
        let seal = SecondFactorSeal(key: key)
        let secret = TOTP.makeSecret()
        let sealed = try seal.seal(secret, account: 7)
        XCTAssertNotEqual(sealed, secret)
        XCTAssertFalse(Data(sealed).range(of: Data(secret)) != nil, "the secret does not appear in what is stored")
        XCTAssertEqual(try seal.open(sealed, account: 7), secret)
        XCTAssertThrowsError(try seal.open(sealed, account: 8), "copied to another account's row")
        XCTAssertThrowsError(try SecondFactorSeal(key: SecondFactorSeal.makeKey()).open(sealed, account: 7), "another key")
        var altered = sealed
        altered[altered.count / 2] ^= 1
        XCTAssertThrowsError(try seal.open(altered, account: 7), "altered")
    }

    func testTheKeyIsReadAsHexOrBase64OfThirtyTwoBytes() {
        let key = SecondFactorSeal.makeKey()
        XCTAssertEqual(SecondFactorSeal.key(from: key.map { String(format: "%02x", $0) }.joined()), key)
        XCTAssertEqual(SecondFactorSeal.key(from: " " + Data(key).base64EncodedString() + "\n"), key)
        XCTAssertNil(SecondFactorSeal.key(from: "too-short"))
        XCTAssertNil(SecondFactorSeal.key(from: Data(key.prefix(16)).base64EncodedString()), "16 bytes is not the key")
    }

    func testRecoveryCodesAreRandomAndMatchHoweverTheyAreTyped() {
        let codes = SecondFactorSeal.makeRecoveryCodes()
        XCTAssertEqual(codes.count, 10)
        XCTAssertEqual(Set(codes).count, 10)
        XCTAssertTrue(codes.allSatisfy { $0.wholeMatch(of: #/[a-z2-7]{4}-[a-z2-7]{4}/#) != nil }, "\(codes)")
        let seal = SecondFactorSeal(key: SecondFactorSeal.makeKey())
        let stored = seal.recoveryCodeHash(codes[0], account: 1)
        XCTAssertEqual(seal.recoveryCodeHash(codes[0].uppercased().replacingOccurrences(of: "-", with: " "), account: 1), stored)
        XCTAssertNotEqual(seal.recoveryCodeHash(codes[0], account: 2), stored, "bound to its account")
        XCTAssertNotEqual(seal.recoveryCodeHash(codes[1], account: 1), stored)
        XCTAssertFalse(stored.contains(codes[0].replacingOccurrences(of: "-", with: "")))
    }
}
