import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Have I Been Pwned's k-anonymity range API (`GET {base}/range/{first 5 hex of SHA-1}`
/// answers every `SUFFIX:COUNT` with that prefix): only five hex digits of the hash leave
/// the server. Answers are cached per prefix for `cacheLifetime`, at most `cacheCapacity`
/// prefixes (the oldest go first), so a person typing one password costs one request.
///
/// Synchronous, for the checker's own Dispatch queue: each look-up waits at most `timeout`.
public final class PwnedPasswordsRangeAPI: BreachedPasswordLookup, @unchecked Sendable {
    public let baseURL: URL
    private let timeout: TimeInterval
    private let cacheLifetime: TimeInterval
    private let cacheCapacity: Int
    private let session: URLSession
    private let now: @Sendable () -> Date
    private let lock = NSLock()
    private var cache: [String: (fetched: Date, counts: [String: Int])] = [:]
    private var order: [String] = []
    /// Requests actually sent (not answered from the cache), for tests and metrics.
    public private(set) var requestsSent = 0

    public init(baseURL: URL, timeout: TimeInterval = 2, cacheLifetime: TimeInterval = 3600, cacheCapacity: Int = 10_000,
                now: @escaping @Sendable () -> Date = Date.init) {
        self.baseURL = baseURL
        self.timeout = timeout
        self.cacheLifetime = cacheLifetime
        self.cacheCapacity = cacheCapacity
        self.now = now
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        configuration.httpAdditionalHeaders = ["Add-Padding": "true", "User-Agent": "LiveSignup"]
        session = URLSession(configuration: configuration)
    }

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
        lock.withLock { requestsSent += 1 }
        let done = DispatchSemaphore(value: 0)
        let outcome = ResultBox()
        let task = session.dataTask(with: url) { data, response, error in
            if let error {
                outcome.result = .failure(BreachedPasswordError("\(url.host ?? "the range API") did not answer: \(error.localizedDescription)"))
            } else if let status = (response as? HTTPURLResponse)?.statusCode, status != 200 {
                outcome.result = .failure(BreachedPasswordError("\(url.host ?? "the range API") answered \(status)"))
            } else {
                outcome.result = .success(data ?? Data())
            }
            done.signal()
        }
        task.resume()
        // The session's own timeout ends the task; this bound is a backstop.
        guard done.wait(timeout: .now() + timeout + 1) == .success, let result = outcome.result else {
            task.cancel()
            throw BreachedPasswordError("\(url.host ?? "the range API") did not answer within \(timeout) s")
        }
        let body = try result.get()
        var counts: [String: Int] = [:]
        for line in String(decoding: body, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: ":")
            guard parts.count == 2, let count = Int(parts[1].trimmingCharacters(in: .whitespaces)) else { continue }
            // Padding lines (count 0) are there to hide the answer's size; they mean "not seen".
            if count > 0 { counts[parts[0].uppercased()] = count }
        }
        return counts
    }
}

private final class ResultBox: @unchecked Sendable {
    var result: Result<Data, BreachedPasswordError>?
}
