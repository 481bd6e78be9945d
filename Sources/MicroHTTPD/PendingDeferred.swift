import CMicroHTTPD
import Locking

/// One suspended connection waiting for a deferred response. The response is delivered at
/// most once: by the work itself, or by the server when shutdown's grace period runs out.
final class PendingDeferred: @unchecked Sendable {
    /// Valid while the connection is suspended, which it is until `deliver` resumes it.
    private let connection: OpaquePointer
    /// The request it answers, for an error response in its own format if it must be cut short.
    let request: HTTPRequest
    private let state = Locked<(delivered: Bool, response: HTTPResponse?)>((false, nil))

    init(connection: OpaquePointer, request: HTTPRequest) {
        self.connection = connection
        self.request = request
    }

    /// Hands over the response and resumes the connection; false if one was already given.
    @discardableResult
    func deliver(_ response: HTTPResponse) -> Bool {
        let first = state.withLock { state -> Bool in
            guard !state.delivered else { return false }
            state.delivered = true
            state.response = response
            return true
        }
        if first { MHD_resume_connection(connection) }
        return first
    }

    var response: HTTPResponse? { state.withLock { $0.response } }
}
