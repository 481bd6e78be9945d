import Foundation
import SignupDomain
import XCTest

/// Issue 56: a rotation publishes the new key before it signs, and the old key stays in the
/// key set until what it signed has expired.
final class SigningKeyRingTests: XCTestCase {
    private let start = Date(timeIntervalSince1970: 1_800_000_000)
    private let hour: TimeInterval = 3600

    private func key(_ id: String, createdAfter created: TimeInterval, signsAfter signs: TimeInterval) -> SigningKey {
        SigningKey(id: id, algorithm: "ES256", privateKeyPEM: id, createdAt: start.addingTimeInterval(created),
                   signsFrom: start.addingTimeInterval(signs))
    }

    func testARotatedKeyIsPublishedFirstThenSignsAndTheOldOneStaysUntilItsTokensExpire() {
        // k1 signs from the start; k2 is added after 10 h and signs 24 h later; tokens live 1 h.
        let ring = SigningKeyRing([key("k2", createdAfter: 10 * hour, signsAfter: 34 * hour),
                                   key("k1", createdAfter: 0, signsAfter: 0)])
        func at(_ hours: Double) -> Date { start.addingTimeInterval(hours * hour) }
        let lifetime = hour

        XCTAssertEqual(ring.signer(at: at(5))?.id, "k1")
        XCTAssertEqual(ring.published(at: at(5), tokenLifetime: lifetime).map(\.id), ["k1", "k2"],
                       "published from the moment it is stored, before it signs")
        XCTAssertEqual(ring.signer(at: at(33.9))?.id, "k1", "the new key waits for its time")
        XCTAssertEqual(ring.signer(at: at(34))?.id, "k2")
        XCTAssertEqual(ring.published(at: at(34.5), tokenLifetime: lifetime).map(\.id), ["k1", "k2"],
                       "the old key stays while a token it signed may live")
        XCTAssertEqual(ring.published(at: at(35), tokenLifetime: lifetime).map(\.id), ["k2"])
        XCTAssertEqual(ring.expired(at: at(35), tokenLifetime: lifetime).map(\.id), ["k1"])
        XCTAssertEqual(ring.expired(at: at(34.5), tokenLifetime: lifetime).map(\.id), [])
    }

    func testBeforeAnyKeySignsThereIsNoSignerAndTwoFirstKeysAgreeOnOne() {
        let waiting = SigningKeyRing([key("k1", createdAfter: 0, signsAfter: hour)])
        XCTAssertNil(waiting.signer(at: start))
        // Two instances that made a first key at the same moment: every instance picks the same.
        let twins = SigningKeyRing([key("b", createdAfter: 0, signsAfter: 0), key("a", createdAfter: 0, signsAfter: 0)])
        XCTAssertEqual(twins.signer(at: start)?.id, "b")
        XCTAssertEqual(SigningKeyRing(twins.keys.reversed()).signer(at: start)?.id, "b")
        XCTAssertEqual(twins.published(at: start.addingTimeInterval(0.5 * hour), tokenLifetime: hour).map(\.id), ["a", "b"])
    }
}
