import Clocks
import Foundation
@testable import SignupServer
@testable import WebKernel
import XCTest

/// The price of a proof of work rises for whoever behaves like a bot (sign-ups and failed
/// sign-ins on an address or its network, hasty forms, a site-wide rush) and falls back by
/// itself, on the clock the test drives.
final class ProofOfWorkPricingTests: XCTestCase {
    private func pricing(_ change: (inout ProofOfWorkSettings) -> Void = { _ in }) -> (ProofOfWorkPricing, TestClock) {
        var settings = ProofOfWorkSettings()
        settings.baseCost = 1000
        change(&settings)
        let clock = TestClock()
        return (ProofOfWorkPricing(settings: settings, now: { clock.now }), clock)
    }

    func testTheCostIsTheBaseTimesTheFactorPerLevelUpToTheMaximum() {
        var settings = ProofOfWorkSettings()
        settings.baseCost = 1000
        XCTAssertEqual((0...6).map(settings.cost(level:)), [1000, 4000, 16000, 64000, 256_000, 256_000, 256_000])
    }

    func testSignUpsFromOneAddressRaiseItsPriceAndAQuietAddressNextDoorPaysLess() {
        let (pricing, _) = pricing()
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.10"), 0)
        pricing.record(.signup, addressKey: "192.0.2.10")
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.10"), 1)
        pricing.record(.signup, addressKey: "192.0.2.10")
        pricing.record(.signup, addressKey: "192.0.2.10")
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.10"), 2, "three sign-ups")
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.77"), 1, "the same /24 at half weight")
        XCTAssertEqual(pricing.level(forAddressKey: "198.51.100.1"), 0, "another network is untouched")
    }

    func testManyAddressesOfOneNetworkRaiseTheNetworksPrice() {
        let (pricing, _) = pricing()
        for host in 1...14 { pricing.record(.signup, addressKey: "203.0.113.\(host)") }
        XCTAssertEqual(pricing.level(forAddressKey: "203.0.113.200"), 3, "a fresh address in a busy /24")
        // IPv6 clients as their keys spell them (ClientKey: the /64, four groups).
        for host in 1...14 { pricing.record(.signup, addressKey: ClientKey.of("2001:db8:aa:\(host)::1")) }
        XCTAssertEqual(pricing.level(forAddressKey: ClientKey.of("2001:db8:aa:ff::9")), 3, "a busy IPv6 /48")
        XCTAssertEqual(pricing.level(forAddressKey: ClientKey.of("2001:db8:bb:1::1")), 0, "the /48 next door")
        XCTAssertEqual(ClientKey.network(ofKey: ClientKey.of("2001:db8:0:ff::1")), "2001:db8:0::/48")
        XCTAssertEqual(ClientKey.network(ofKey: ClientKey.of("2001:db8::1")), "2001:db8:0::/48", "one network, one spelling")
        XCTAssertEqual(ClientKey.network(ofKey: "203.0.113.9"), "203.0.113.0/24")
    }

    func testHastyFormsAndFailedSignInsCountAndThePriceFallsBackWhenThePressureEnds() {
        let (pricing, clock) = pricing()
        pricing.record(.implausiblyFast, addressKey: "192.0.2.1")
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.1"), 2, "a hasty form weighs three")
        for _ in 0..<4 { pricing.record(.failedSignin, addressKey: "192.0.2.1") }
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.1"), 3, "pressure 7")
        clock.advance(by: 600)
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.1"), 2, "halved after the half-life")
        clock.advance(by: 3 * 600)
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.1"), 0, "back to the base price")
        pricing.sweep()
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.1"), 0)
    }

    func testARushOfSignUpsEverywhereRaisesEveryPriceAndTheMaximumHolds() {
        let (pricing, clock) = pricing { $0.normalSignupsPerMinute = 5; $0.maximumLevel = 3 }
        for host in 1...6 { pricing.record(.signup, addressKey: "10.\(host).0.1") }
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.1"), 1, "above normal: one level for everybody")
        for host in 7...21 { pricing.record(.signup, addressKey: "10.\(host).0.1") }
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.1"), 2, "above four times normal")
        for _ in 0..<20 { pricing.record(.signup, addressKey: "10.1.0.1") }
        XCTAssertEqual(pricing.level(forAddressKey: "10.1.0.1"), 3, "never above the maximum")
        clock.advance(by: 61)
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.1"), 0, "the rush is over a minute later")
    }

    func testMemoryIsBoundedByDroppingTheFaintestPressure() {
        var settings = ProofOfWorkSettings()
        settings.baseCost = 1000
        settings.normalSignupsPerMinute = 1_000_000
        let pricing = ProofOfWorkPricing(settings: settings, capacity: 100, now: { Date(timeIntervalSince1970: 0) })
        for _ in 0..<5 { pricing.record(.signup, addressKey: "192.0.2.1") }
        for host in 0..<200 { pricing.record(.signup, addressKey: "10.0.\(host / 250).\(host % 250)") }
        XCTAssertLessThanOrEqual(pricing.trackedKeys, 100)
        XCTAssertEqual(pricing.level(forAddressKey: "192.0.2.1"), 2, "the heaviest pressure is kept")
    }
}
