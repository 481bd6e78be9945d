import Foundation
import Identity
import MicroHTTPD
import SignupDomain
import WebKernel

/// What a proof of work costs and how its price moves (settings; docs/OPERATIONS.md, "Bots pay").
public struct ProofOfWorkSettings: Sendable, Equatable {
    /// `maxnumber` at level 0: a browser tries half of it on average (a median 0.09 s in
    /// headless Chromium on this project's 2-core test machine; a phone a few times that).
    public var baseCost = 20_000
    /// Each level multiplies the cost by this.
    public var levelFactor = 4
    /// The highest level (base × factor^level at most).
    public var maximumLevel = 4
    /// How long a challenge may be solved and used.
    public var lifetime: TimeInterval = 3600
    /// A form submitted sooner than this after its page was served is implausibly fast.
    public var plausibleSeconds: TimeInterval = 3
    /// Pressure on an address or network halves in this time.
    public var pressureHalfLife: TimeInterval = 600
    /// Sign-ups a minute the operator considers normal; above it every price rises a level
    /// (and another at four times it).
    public var normalSignupsPerMinute = 30.0

    public init() {}

    /// `maxnumber` at `level`.
    public func cost(level: Int) -> Int {
        var cost = baseCost
        for _ in 0..<min(max(level, 0), maximumLevel) { cost = cost.multipliedReportingOverflow(by: levelFactor).partialValue }
        return max(cost, 1)
    }
}

/// What raises the price for a client: recent sign-ups and failed sign-ins from its address
/// and its network (/24, /48), forms submitted implausibly fast, and sign-ups above the
/// operator's normal rate everywhere. Pressure decays by half every `pressureHalfLife`, so
/// the price falls back by itself when the pressure ends.
///
/// Kept in this process (bounded: the least recently pressed keys are dropped beyond
/// `capacity`); each instance prices what it sees.
final class ProofOfWorkPricing: @unchecked Sendable {
    enum Event {
        /// A sign-up was accepted (an account, or a proof of address started).
        case signup
        /// A sign-in failed.
        case failedSignin
        /// A mailed code was typed wrong.
        case wrongCode
        /// A form came back sooner than a person could have filled it.
        case implausiblyFast

        /// Failed sign-ins and wrong codes: after them, signing in and proving an address
        /// ask for a proof of work too.
        var isFailure: Bool { self == .failedSignin || self == .wrongCode }

        var weight: Double {
            switch self {
            case .signup, .failedSignin, .wrongCode: 1
            case .implausiblyFast: 3
            }
        }
    }

    let settings: ProofOfWorkSettings
    private let now: @Sendable () -> Date
    private let capacity: Int
    private let lock = NSLock()
    private var pressure: [String: (score: Double, at: Date)] = [:]
    /// Sign-ups of the last minute, for the global level.
    private var recentSignups: [Date] = []

    init(settings: ProofOfWorkSettings, capacity: Int = 100_000, now: @escaping @Sendable () -> Date) {
        self.settings = settings
        self.capacity = capacity
        self.now = now
    }

    /// The keys a client's pressure is kept under: its address key and its network.
    static func keys(forAddressKey addressKey: String) -> [String] {
        ["a " + addressKey, "n " + ClientKey.network(ofKey: addressKey)]
    }

    func record(_ event: Event, addressKey: String) {
        let date = now()
        lock.withLock {
            // Failures are also kept apart: they decide whether sign-in and /verify ask for a proof.
            let keys = Self.keys(forAddressKey: addressKey)
                + (event.isFailure ? Self.keys(forAddressKey: addressKey).map { "f " + $0 } : [])
            for key in keys {
                pressure[key] = (decayed(pressure[key], at: date) + event.weight, date)
            }
            if event == .signup {
                recentSignups.append(date)
                recentSignups.removeAll { date.timeIntervalSince($0) > 60 }
            }
            if pressure.count > capacity { dropFaintest() }
        }
    }

    /// The level a new challenge for this client costs: its address's or network's pressure
    /// (each level doubles what it takes: level 1 from 0.5, 2 from 2.5, 3 from 6.5, 4 from
    /// 14.5, so one event, 1, holds level 1 for one half-life as it decays), plus the global
    /// level.
    func level(forAddressKey addressKey: String) -> Int {
        let date = now()
        return lock.withLock {
            let scores = Self.keys(forAddressKey: addressKey).map { decayed(pressure[$0], at: date) }
            // The network counts at half weight: many people share a /24 (a campus, a NAT).
            let score = max(scores[0], scores[1] / 2)
            // ⌊log2(score + 1.5)⌋: thresholds half an event below 1, 3, 7, 15, so a whole
            // number of events reaches its level although decay began the moment it was recorded.
            let local = Int(log2(score + 1.5).rounded(.down))
            let perMinute = Double(recentSignups.filter { date.timeIntervalSince($0) <= 60 }.count)
            let normal = settings.normalSignupsPerMinute
            let global = perMinute > 4 * normal ? 2 : perMinute > normal ? 1 : 0
            return min(local + global, settings.maximumLevel)
        }
    }

    /// Whether signing in or typing a mailed code from this client asks for a proof of work:
    /// after a failure (a failed sign-in, a wrong code) from its address (for one half-life),
    /// or three from its network.
    func needsProofAfterFailures(addressKey: String) -> Bool {
        let date = now()
        return lock.withLock {
            let failures = Self.keys(forAddressKey: addressKey).map { decayed(pressure["f " + $0], at: date) }
            return failures[0] >= 0.5 || failures[1] >= 2.5
        }
    }

    func cost(forAddressKey addressKey: String) -> Int {
        settings.cost(level: level(forAddressKey: addressKey))
    }

    private func decayed(_ entry: (score: Double, at: Date)?, at date: Date) -> Double {
        guard let entry else { return 0 }
        let elapsed = max(0, date.timeIntervalSince(entry.at))
        return entry.score * pow(0.5, elapsed / settings.pressureHalfLife)
    }

    /// Drops the tenth of entries with the least pressure left (under the lock).
    private func dropFaintest() {
        let date = now()
        let faintest = pressure.map { ($0.key, decayed($0.value, at: date)) }.sorted { $0.1 < $1.1 }
        for (key, _) in faintest.prefix(max(1, capacity / 10)) { pressure[key] = nil }
    }

    /// How many addresses and networks carry pressure now (tests, bounds).
    var trackedKeys: Int { lock.withLock { pressure.count } }

    /// Forgets pressure that has decayed to nothing (the app's sweep calls it).
    func sweep() {
        let date = now()
        lock.withLock {
            pressure = pressure.filter { decayed($0.value, at: date) >= 0.05 }
            recentSignups.removeAll { date.timeIntervalSince($0) > 60 }
        }
    }
}
