import CurlShims
import Foundation

/// GETs from a server outside the process with every cost bounded: the body is read as a
/// stream and refused past `maxBytes` (a declared `Content-Length` over it is refused before
/// any byte is read), the whole exchange ends at `deadline` after it began however slowly the
/// bytes arrive, and at most `maxConcurrent` exchanges run at once (the next one is refused
/// at once rather than queued behind a source that has stopped answering). After
/// `failuresBeforePause` failures in a row it stops asking for `pause` seconds and refuses
/// at once (`.paused`), so a broken source costs the people using the site nothing but its
/// fail-open answer; then one exchange at a time tries again until one succeeds.
///
/// libcurl does the exchange (through CurlShims): its total timeout, its size cap and a write
/// callback that stops the transfer the moment the cap is crossed. URLSession could not be
/// made to do this on Linux: its completion handler collects the whole body, its timeouts
/// only bound the wait between bytes, and even a delegate that cancels at the cap let an
/// endless loopback answer queue up a gigabyte of chunks before the cancel took (issue 25).
///
/// Synchronous: each exchange runs on the caller's thread (a Dispatch queue of the caller's,
/// never libmicrohttpd's threads), so an exchange costs no thread of its own.
public final class BoundedHTTPFetcher: @unchecked Sendable {
    public struct Limits: Sendable {
        /// Bytes of body accepted; more is `.tooLarge`.
        public var maxBytes: Int
        /// Seconds from the request's start to the body's last byte.
        public var deadline: TimeInterval
        /// Exchanges in flight at once; one more is `.busy`.
        public var maxConcurrent: Int
        /// Failures in a row after which the source is left alone for `pause` seconds.
        public var failuresBeforePause: Int
        public var pause: TimeInterval

        public init(maxBytes: Int, deadline: TimeInterval, maxConcurrent: Int,
                    failuresBeforePause: Int = 5, pause: TimeInterval = 30) {
            self.maxBytes = maxBytes
            self.deadline = deadline
            self.maxConcurrent = maxConcurrent
            self.failuresBeforePause = failuresBeforePause
            self.pause = pause
        }
    }

    /// Why an exchange gave no body. `reason` is a short, stable label for metrics.
    public enum Failure: Error, Equatable, CustomStringConvertible, Sendable {
        case busy(Int)
        case paused(until: Date)
        case tooLarge(Int)
        case timedOut(TimeInterval)
        case status(Int)
        case unreachable(String)
        case unusable

        public var reason: String {
            switch self {
            case .busy: return "busy"
            case .paused: return "paused"
            case .tooLarge: return "too_large"
            case .timedOut: return "timeout"
            case .status: return "status"
            case .unreachable: return "unreachable"
            case .unusable: return "garbage"
            }
        }

        public var description: String {
            switch self {
            case .busy(let limit): return "already waiting on \(limit) answers"
            case .paused: return "failed repeatedly and is left alone for a while"
            case .tooLarge(let limit): return "answered more than \(limit) bytes"
            case .timedOut(let seconds): return "did not answer in full within \(seconds) s"
            case .status(let code): return "answered \(code)"
            case .unreachable(let why): return "did not answer: \(why)"
            case .unusable: return "answered something unreadable"
            }
        }
    }

    public let limits: Limits
    private let headers: [String]
    /// libcurl's DNS and TLS-session cache, shared by this fetcher's exchanges.
    private let share: UnsafeMutableRawPointer?
    private let now: @Sendable () -> Date
    private let lock = NSLock()
    /// Exchanges under way.
    private var admitted = 0
    private var failuresInARow = 0
    private var pausedUntil: Date?

    public init(limits: Limits, headers: [String: String] = [:], now: @escaping @Sendable () -> Date = Date.init) {
        self.limits = limits
        self.headers = headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        self.now = now
        // Lives as long as the process (a fetcher is made once, from the configuration).
        share = curl_shim_share_create()
    }

    /// Exchanges in flight now (tests and metrics).
    public var inFlight: Int { lock.withLock { admitted } }

    /// POSTs `body` with `headers` ("Name: value" each, besides the fetcher's own) and returns
    /// the 2xx status, or the bound it crossed or the status it got (`.status`). The answer's
    /// body is read up to `maxBytes` and dropped.
    public func post(_ url: URL, body: [UInt8], headers extra: [String]) throws(Failure) -> Int {
        try exchange(url, body: body, extraHeaders: extra, decode: { _ in () }).status
    }

    /// What `decode` makes of the body of a 2xx answer to `GET url`, or the bound it crossed.
    /// `decode` returns nil for a body it cannot use (`.unusable`), which counts as a failure
    /// of the source like any other.
    public func get<Value>(_ url: URL, decode: (Data) -> Value?) throws(Failure) -> Value {
        try exchange(url, body: nil, extraHeaders: [], decode: decode).value
    }

    /// One answer read whatever its status, for sources that answer errors in the body
    /// (OAuth's token endpoint says `invalid_grant` with a 400): its status, its body, and
    /// how long it may be kept (Cache-Control's `max-age`, nil without one or with `no-store`).
    public struct Answer: Sendable {
        public let status: Int
        public let body: Data
        public let maxAge: TimeInterval?
    }

    /// GETs `url` (or POSTs `body`) and returns what `decode` makes of the answer, whatever
    /// its status; every bound as for `get`. `decode` returns nil for an answer it cannot use.
    public func fetch<Value>(_ url: URL, body: [UInt8]? = nil, headers extra: [String] = [],
                             decode: (Answer) -> Value?) throws(Failure) -> Value {
        try exchange(url, body: body, extraHeaders: extra, readAnyStatus: true, decode: decode).value
    }

    private func exchange<Value>(_ url: URL, body: [UInt8]?, extraHeaders: [String],
                                 decode: (Data) -> Value?) throws(Failure) -> (value: Value, status: Int) {
        try exchange(url, body: body, extraHeaders: extraHeaders, readAnyStatus: false) { decode($0.body) }
    }

    private func exchange<Value>(_ url: URL, body: [UInt8]?, extraHeaders: [String], readAnyStatus: Bool,
                                 decode: (Answer) -> Value?) throws(Failure) -> (value: Value, status: Int) {
        let refusal = lock.withLock { () -> Failure? in
            if let pausedUntil {
                // Paused: refuse until the pause ends, then let one exchange at a time probe.
                if now() < pausedUntil || admitted > 0 { return .paused(until: pausedUntil) }
            }
            guard admitted < limits.maxConcurrent else { return .busy(limits.maxConcurrent) }
            admitted += 1
            return nil
        }
        if let refusal { throw refusal }
        let outcome: Result<(value: Value, status: Int), Failure> = transfer(url, body: body, extraHeaders: extraHeaders,
                                                                             readAnyStatus: readAnyStatus)
            .flatMap { answer in decode(answer).map { .success(($0, answer.status)) } ?? .failure(.unusable) }
        lock.withLock {
            admitted -= 1
            if case .success = outcome {
                failuresInARow = 0
                pausedUntil = nil
            } else {
                failuresInARow += 1
                if failuresInARow >= limits.failuresBeforePause { pausedUntil = now() + limits.pause }
            }
        }
        return try outcome.get()
    }

    private func transfer(_ url: URL, body: [UInt8]?, extraHeaders: [String], readAnyStatus: Bool) -> Result<Answer, Failure> {
        var result = curl_shim_get_result()
        let cHeaders = (headers + extraHeaders).map { strdup($0) }
        defer { cHeaders.forEach { free($0) } }
        // A POST needs a body pointer even when empty (NULL means GET): one spare byte.
        let storage = body.map { $0.isEmpty ? [0] : $0 } ?? []
        let outcome = url.absoluteString.withCString { address in
            cHeaders.map { UnsafePointer($0) }.withUnsafeBufferPointer { lines in
                storage.withUnsafeBufferPointer { bytes in
                    var request = curl_shim_get_request(
                        url: address, headers: lines.baseAddress, header_count: lines.count,
                        timeout_ms: max(1, Int(limits.deadline * 1000)), max_bytes: limits.maxBytes,
                        body: body == nil ? nil : bytes.baseAddress, body_length: body?.count ?? 0,
                        read_any_status: readAnyStatus ? 1 : 0)
                    return curl_shim_get(&request, share, &result)
                }
            }
        }
        defer { curl_shim_free_result(&result) }
        switch outcome {
        case CURL_SHIM_OK:
            let cacheControl = withUnsafeBytes(of: result.cache_control) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            return .success(Answer(status: result.status, body: result.body.map { Data(bytes: $0, count: result.length) } ?? Data(),
                                   maxAge: Self.maxAge(cacheControl)))
        case CURL_SHIM_STATUS:
            return .failure(.status(result.status))
        case CURL_SHIM_TOO_LARGE:
            return .failure(.tooLarge(limits.maxBytes))
        case CURL_SHIM_TIMED_OUT:
            return .failure(.timedOut(limits.deadline))
        default:
            let words = withUnsafeBytes(of: result.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            return .failure(.unreachable(words))
        }
    }

    /// Cache-Control's `max-age` in seconds; nil without one, or when the answer must not be
    /// kept (`no-store`, `no-cache`).
    public static func maxAge(_ cacheControl: String) -> TimeInterval? {
        var maxAge: TimeInterval?
        for directive in cacheControl.lowercased().split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            switch parts.first {
            case "no-store", "no-cache": return nil
            case "max-age" where parts.count == 2:
                maxAge = Int(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))).map { TimeInterval(max(0, $0)) }
            default: break
            }
        }
        return maxAge
    }
}
