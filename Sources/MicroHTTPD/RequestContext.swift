import CMicroHTTPD

/// What libmicrohttpd tells us about one request across the calls of the access handler:
/// first the headers, then body chunks, then the final call that answers it.
final class RequestContext {
    let method: String
    let path: String
    let headers: HTTPHeaders
    let query: [(name: String, value: String)]
    var body: [UInt8] = []
    var bodyExceededLimit = false
    /// Set while a deferred response is being computed; the connection is suspended.
    var isAwaitingDeferredResponse = false
    /// This request was answered through a deferred response (counted until it completes).
    var wasDeferred = false
    /// The deferred response once it is ready, handed over from the producing thread.
    let deferredResponse = Locked<HTTPResponse?>(nil)

    init(connection: OpaquePointer, method: String, path: String, maxBodyBytes: Int) {
        self.method = method
        self.path = path
        self.headers = HTTPHeaders(Self.values(of: connection, kind: MHD_ValueKind.HEADER_KIND))
        self.query = Self.values(of: connection, kind: MHD_ValueKind.GET_ARGUMENT_KIND)
        if let declared = headers["Content-Length"].flatMap(Int.init), declared > maxBodyBytes {
            bodyExceededLimit = true
        }
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

    var request: HTTPRequest {
        HTTPRequest(method: method, path: path, query: query, headers: headers,
                    body: body, bodyExceededLimit: bodyExceededLimit)
    }

    private final class Collector {
        var values: [(name: String, value: String)] = []
    }

    private static func values(of connection: OpaquePointer, kind: MHD_ValueKind) -> [(name: String, value: String)] {
        let collector = Collector()
        let iterator: MHD_KeyValueIterator = { cls, _, key, value in
            let collector = Unmanaged<Collector>.fromOpaque(cls!).takeUnretainedValue()
            if let key {
                collector.values.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
            }
            return MHD_Result.YES
        }
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values(connection, kind, iterator,
                                          Unmanaged.passUnretained(collector).toOpaque())
        }
        return collector.values
    }
}
