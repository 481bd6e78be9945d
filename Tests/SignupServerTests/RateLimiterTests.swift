import Clocks
import Foundation
@testable import SignupServer
@testable import WebKernel
import XCTest

/// The token buckets every limit is made of, on a clock the test moves: a key spends its
/// burst, refills at its rate, and is forgotten once full again; other keys are untouched.
final class RateLimiterTests: XCTestCase {
    private let clock = TestClock()

    private func limiter(_ rate: Rate, maximumKeys: Int = 100) -> RateLimiter {
        let clock = clock
        return RateLimiter(.edits, rate: rate, maximumKeys: maximumKeys, now: { clock.now })
    }

    func testABurstIsSpentThenRefillsAtTheRateWithoutTouchingOtherKeys() {
        let limiter = limiter(.per(second: 2, burst: 3))
        for _ in 0..<3 { XCTAssertEqual(limiter.take("a"), .allowed) }
        XCTAssertEqual(limiter.take("a"), .limited(retryAfter: 0.5))
        XCTAssertEqual(limiter.take("b"), .allowed, "another key has its own bucket")
        clock.advance(by: 0.25)
        XCTAssertEqual(limiter.take("a"), .limited(retryAfter: 0.25), "half a token back after a quarter second")
        clock.advance(by: 0.25)
        XCTAssertEqual(limiter.take("a"), .allowed)
        XCTAssertEqual(limiter.take("a"), .limited(retryAfter: 0.5))
    }

    func testCheckSpendsNothing() {
        let limiter = limiter(.per(second: 1, burst: 1))
        XCTAssertEqual(limiter.check("a"), .allowed)
        XCTAssertEqual(limiter.check("a"), .allowed)
        XCTAssertEqual(limiter.trackedKeys, 0, "a full bucket is not kept")
        XCTAssertEqual(limiter.take("a"), .allowed)
        XCTAssertEqual(limiter.check("a"), .limited(retryAfter: 1))
        XCTAssertEqual(limiter.check("a", cost: 0), .allowed)
    }

    func testAReservationWaitsOrIsRefusedAndARefundGivesItBack() {
        let limiter = limiter(.per(second: 1, burst: 2))
        XCTAssertEqual(limiter.reserve("a", maximumWait: 5), 0)
        XCTAssertEqual(limiter.reserve("a", maximumWait: 5), 0)
        XCTAssertEqual(limiter.reserve("a", maximumWait: 5), 1, "spent ahead of the refill")
        XCTAssertNil(limiter.reserve("a", maximumWait: 1.5), "a wait of two seconds is too long")
        limiter.refund("a")
        XCTAssertEqual(limiter.reserve("a", maximumWait: 5), 1, "the refunded token is spent again")
        clock.advance(by: 10)
        XCTAssertEqual(limiter.take("a"), .allowed)
    }

    func testFullBucketsAreForgottenAndTheTableStaysBounded() {
        let limiter = limiter(.per(second: 1, burst: 1), maximumKeys: 4)
        XCTAssertEqual(limiter.take("a"), .allowed)
        XCTAssertEqual(limiter.trackedKeys, 1)
        clock.advance(by: 1)
        XCTAssertEqual(limiter.check("a"), .allowed)
        XCTAssertEqual(limiter.trackedKeys, 0, "refilled to full: nothing to remember")
        for key in 0..<10 {
            XCTAssertEqual(limiter.take("k\(key)"), .allowed)
            XCTAssertLessThanOrEqual(limiter.trackedKeys, 4)
        }
        XCTAssertEqual(limiter.take("k9"), .limited(retryAfter: 1), "the newest keys are kept")
    }

    func testUnlimitedIsAlwaysAllowedAndKeepsNothing() {
        let limiter = limiter(.unlimited)
        for _ in 0..<100 { XCTAssertEqual(limiter.take("a"), .allowed) }
        XCTAssertEqual(limiter.reserve("a", maximumWait: 0), 0)
        XCTAssertEqual(limiter.trackedKeys, 0)
    }
}
