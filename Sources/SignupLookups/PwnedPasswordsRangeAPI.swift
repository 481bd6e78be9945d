import Foundation
import OutsideHTTP
import SignupDomain

/// Have I Been Pwned's k-anonymity range API (`GET {base}/range/{first 5 hex of SHA-1}`
/// answers every `SUFFIX:COUNT` with that prefix): only five hex digits of the hash leave
/// the server. Answers are cached per prefix for `cacheLifetime`, at most `cacheCapacity`
/// prefixes (the oldest go first), so a person typing one password costs one request.
///
/// The API is a dependency an operator may point at a mirror or a proxy, so a broken one
/// must cost little: each answer is read as a stream and refused past `maxAnswerBytes`, the
/// whole look-up ends within `timeout`, at most `maxConcurrentLookups` run at once, and an
/// answer that is not `SUFFIX:COUNT` lines is refused, and after five failures in a row the
/// API is left alone for 30 s. Every refusal is an error, which the checker answers from the
/// built-in list (fail-open).
///
/// Synchronous, for the checker's own Dispatch queue.
public final class PwnedPasswordsRangeAPI: BreachedPasswordLookup, @unchecked Sendable {
    /// A real answer with padding is 800 to 1,000 lines of 40 bytes or so (under 40 KiB).
    public static let maxAnswerBytes = 128 * 1024
    /// Look-ups waiting on the API at once; more fail open at once instead of queueing.
    public static let maxConcurrentLookups = 8

    public let baseURL: URL
    private let fetcher: BoundedHTTPFetcher
    private let cacheLifetime: TimeInterval
    private let cacheCapacity: Int
    private let now: @Sendable () -> Date
    private let lock = NSLock()
    private var cache: [String: (fetched: Date, counts: [String: Int])] = [:]
    private var order: [String] = []
    /// Requests actually sent (not answered from the cache), for tests and metrics.
    public private(set) var requestsSent = 0

    public init(baseURL: URL, timeout: TimeInterval = 2, cacheLifetime: TimeInterval = 3600, cacheCapacity: Int = 10_000,
                maxAnswerBytes: Int = PwnedPasswordsRangeAPI.maxAnswerBytes,
                maxConcurrentLookups: Int = PwnedPasswordsRangeAPI.maxConcurrentLookups,
                now: @escaping @Sendable () -> Date = Date.init) {
        self.baseURL = baseURL
        self.cacheLifetime = cacheLifetime
        self.cacheCapacity = cacheCapacity
        self.now = now
        fetcher = BoundedHTTPFetcher(
            limits: .init(maxBytes: maxAnswerBytes, deadline: timeout, maxConcurrent: maxConcurrentLookups),
            headers: ["Add-Padding": "true", "User-Agent": "LiveSignup"], now: now)
    }

    /// Look-ups waiting on the API now.
    public var lookupsInFlight: Int { fetcher.inFlight }

    public func timesSeen(sha1 hash: String) throws -> Int {
        let hash = hash.uppercased()
        guard hash.utf8.count == 40 else { throw BreachedPasswordError("not a SHA-1: \(hash.prefix(8))…") }
        let prefix = String(hash.prefix(5))
        let suffix = String(hash.dropFirst(5))
        let cached: [String: Int]? = lock.withLock {
            guard let entry = cache[prefix], now().timeIntervalSince(entry.fetched) < cacheLifetime else { return nil }
            return entry.counts
        }
        if let cached { return cached[suffix] ?? 0 }
        let counts = try fetch(prefix)
        lock.withLock {
            if cache[prefix] == nil { order.append(prefix) }
            cache[prefix] = (now(), counts)
            while order.count > cacheCapacity { cache[order.removeFirst()] = nil }
        }
        return counts[suffix] ?? 0
    }

    private func fetch(_ prefix: String) throws -> [String: Int] {
        let url = baseURL.appendingPathComponent("range").appendingPathComponent(prefix)
        let source = url.host ?? "the range API"
        lock.withLock { requestsSent += 1 }
        do {
            return try fetcher.get(url, decode: Self.parse)
        } catch .unusable {
            throw BreachedPasswordError("\(source) answered something other than SUFFIX:COUNT lines", reason: "garbage")
        } catch {
            throw BreachedPasswordError("\(source) \(error)", reason: error.reason)
        }
    }

    /// `SUFFIX:COUNT` lines (35 hex digits, a colon, a count), or nil if any line is not one
    /// or there are none (every prefix has hundreds of hashes): a proxy's error page or a
    /// wrong URL must not read as "never seen".
    package static func parse(_ body: Data) -> [String: Int]? {
        var counts: [String: Int] = [:]
        var lines = 0
        for line in body.split(separator: UInt8(ascii: "\n")) {
            var line = line
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if line.isEmpty { continue }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")),
                  line.distance(from: line.startIndex, to: colon) == 35,
                  line[..<colon].allSatisfy(\.isHexDigitByte),
                  let count = Int(String(decoding: line[line.index(after: colon)...], as: UTF8.self)
                      .trimmingCharacters(in: .whitespaces)),
                  count >= 0
            else { return nil }
            lines += 1
            // Padding lines (count 0) are there to hide the answer's size; they mean "not seen".
            if count > 0 { counts[String(decoding: line[..<colon], as: UTF8.self).uppercased()] = count }
        }
        return lines > 0 ? counts : nil
    }
}

private extension UInt8 {
    var isHexDigitByte: Bool {
        (48...57).contains(self) || (65...70).contains(self) || (97...102).contains(self)
    }
}
