import CMicroHTTPD
import MicroHTTPDShims

/// What libmicrohttpd tells us about one request across its callbacks: the raw target when
/// the request line arrives, then the headers, then body chunks, then the final call that
/// answers it.
final class IncomingRequest {
    /// The request target exactly as sent ("/static/app.js%00?v=1"), before unescaping.
    let rawTarget: String
    private(set) var method = "GET"
    private(set) var version = "HTTP/1.1"
    private(set) var headers = HTTPHeaders()
    private(set) var query: [(name: String, value: String)] = []
    private(set) var remoteAddress = ""
    /// Set by the first access-handler call, which reads the headers.
    private(set) var hasHeaders = false
    /// Appended to by each body callback. Those come one at a time, on the connection's
    /// thread, so no runtime exclusivity check per access (see DEVELOPMENT.md, "exclusivity").
    @exclusivity(unchecked) var body: [UInt8] = []
    var bodyExceededLimit = false
    /// Set while a deferred response is being computed; the connection is suspended.
    var isAwaitingDeferredResponse = false
    /// The deferred work this request waits for, until it completes (or shutdown forces it).
    var pendingDeferred: PendingDeferred?

    init(rawTarget: String) {
        self.rawTarget = rawTarget
    }

    /// The first access-handler call: headers are complete, the body has not been read.
    func readHeaders(connection: OpaquePointer, method: String, version: String, maxBodyBytes: Int) {
        self.method = method
        self.version = version
        headers = HTTPHeaders(Self.values(of: connection, kind: MHD_ValueKind.HEADER_KIND))
        query = Self.values(of: connection, kind: MHD_ValueKind.GET_ARGUMENT_KIND)
        let address = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            mhd_shim_client_address(connection, buffer.baseAddress, buffer.count) == 0
                ? String(cString: buffer.baseAddress!) : nil
        }
        if let address { remoteAddress = address }
        if let declared = headers["Content-Length"].flatMap(Int.init), declared > maxBodyBytes {
            bodyExceededLimit = true
        }
        hasHeaders = true
    }

    func append(_ chunk: UnsafeRawBufferPointer, maxBodyBytes: Int) {
        guard !bodyExceededLimit else { return }
        if body.count + chunk.count > maxBodyBytes {
            bodyExceededLimit = true
            body = []
        } else {
            body.append(contentsOf: chunk)
        }
    }

    /// The raw path: the target up to its query.
    var rawPath: String {
        guard let query = rawTarget.utf8.firstIndex(of: UInt8(ascii: "?")) else { return rawTarget }
        return String(rawTarget[..<query])
    }

    var request: HTTPRequest {
        let rawPath = rawPath
        return HTTPRequest(method: method, path: PercentDecoding.decode(rawPath), rawPath: rawPath, query: query,
                    headers: headers, body: body, bodyExceededLimit: bodyExceededLimit,
                    version: version, remoteAddress: remoteAddress)
    }

    /// The request without its body (which may hold a password), to keep while waiting.
    var requestWithoutBody: HTTPRequest {
        HTTPRequest(method: method, path: PercentDecoding.decode(rawPath), rawPath: rawPath, query: query,
                    headers: headers, version: version, remoteAddress: remoteAddress)
    }

    private typealias Values = [(name: String, value: String)]

    /// Sized once (libmicrohttpd counts them when given no iterator) and filled through a
    /// pointer to a local array: no collector object, no regrowth, nothing allocated for a
    /// request without query parameters.
    private static func values(of connection: OpaquePointer, kind: MHD_ValueKind) -> Values {
        let count = Int(MHD_get_connection_values(connection, kind, nil, nil))
        guard count > 0 else { return [] }
        var values = Values()
        values.reserveCapacity(count)
        let iterator: MHD_KeyValueIterator = { cls, _, key, value in
            if let key {
                cls!.assumingMemoryBound(to: Values.self).pointee
                    .append((String(cString: key), value.map { String(cString: $0) } ?? ""))
            }
            return MHD_Result.YES
        }
        withUnsafeMutablePointer(to: &values) { pointer in
            _ = MHD_get_connection_values(connection, kind, iterator, pointer)
        }
        return values
    }
}
