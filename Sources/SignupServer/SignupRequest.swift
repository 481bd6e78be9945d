import MicroHTTPD

/// What a handler needs to know about its request, worked out once by the router: the
/// request itself, the client's address (behind trusted proxies, the one they name) and its
/// rate-limit key. The visitor's language is read only by the handlers that show text, when
/// they ask (`SignupRoutes.visitorLanguage`), so the typing path never negotiates one.
struct SignupRequest: Sendable {
    let http: HTTPRequest
    /// The client's address as the access log and limits see it.
    let client: String
    /// The client's rate-limit key (its address; an IPv6 /64).
    let clientKey: String

    init(_ http: HTTPRequest, client: String) {
        self.http = http
        self.client = client
        clientKey = ClientKey.of(client)
    }

    var method: String { http.method }
}
