import Foundation

/// How often something may happen: a sustained rate with a burst allowance (a token bucket:
/// `burst` tokens, refilled at `perSecond`). Written like nginx's `limit_req`:
/// "2/s,burst=60", "1/min,burst=5", or "off".
public struct Rate: Sendable, Equatable, CustomStringConvertible {
    public var burst: Double
    public var perSecond: Double

    public init(burst: Double, perSecond: Double) {
        self.burst = burst
        self.perSecond = perSecond
    }

    public static func per(second count: Double, burst: Double) -> Rate { Rate(burst: burst, perSecond: count) }
    public static func per(minute count: Double, burst: Double) -> Rate { Rate(burst: burst, perSecond: count / 60) }

    /// No limit at all.
    public static let unlimited = Rate(burst: .infinity, perSecond: .infinity)
    public var isUnlimited: Bool { burst.isInfinite }

    public enum ParseError: Error, CustomStringConvertible {
        case invalid(String)
        public var description: String {
            switch self {
            case .invalid(let text):
                return "'\(text)' is not a rate: write COUNT/UNIT with UNIT s, min, h or d, optionally ',burst=N' (e.g. '2/s,burst=60'), or 'off'."
            }
        }
    }

    public init(parsing text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if trimmed == "off" || trimmed == "unlimited" {
            self = .unlimited
            return
        }
        let parts = trimmed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let ratePart = parts.first else { throw ParseError.invalid(text) }
        let fraction = ratePart.split(separator: "/")
        guard fraction.count == 2, let count = Double(fraction[0]), count > 0, count.isFinite else {
            throw ParseError.invalid(text)
        }
        let seconds: Double
        switch fraction[1] {
        case "s", "sec", "second": seconds = 1
        case "m", "min", "minute": seconds = 60
        case "h", "hour": seconds = 3600
        case "d", "day": seconds = 86_400
        default: throw ParseError.invalid(text)
        }
        var burst = max(1, count)
        for option in parts.dropFirst() {
            let pair = option.split(separator: "=")
            guard pair.count == 2, pair[0] == "burst", let value = Double(pair[1]), value >= 1, value.isFinite else {
                throw ParseError.invalid(text)
            }
            burst = value
        }
        self.init(burst: burst, perSecond: count / seconds)
    }

    public var description: String {
        if isUnlimited { return "off" }
        let perMinute = perSecond * 60
        let rate: String
        if perSecond >= 1 || perSecond == perSecond.rounded() {
            rate = "\(Self.number(perSecond))/s"
        } else if perMinute >= 1 {
            rate = "\(Self.number(perMinute))/min"
        } else if perMinute * 60 >= 1 || perMinute * 60 == (perMinute * 60).rounded() {
            rate = "\(Self.number(perMinute * 60))/h"
        } else {
            rate = "\(Self.number(perMinute * 60 * 24))/d"
        }
        return "\(rate),burst=\(Self.number(burst))"
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.3g", value)
    }
}
