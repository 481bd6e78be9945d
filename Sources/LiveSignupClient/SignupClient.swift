import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Entry point for programs and tests talking to a LiveSignup server.
public struct SignupClient: Sendable {
    /// The server root; `/sessions`, `/fields` and `/events` are resolved against it.
    public let baseURL: URL
    /// Used for `POST /sessions` and `POST /fields`. Event streams use their own delegate-based session.
    public let session: URLSession
    /// Delay before an event stream reconnects until the server sends `retry:`.
    public let reconnectionTime: Duration
    /// Caps every reconnect delay, including the server's `retry: 2000`; tests set it low so a
    /// reconnect does not cost two seconds.
    public let maximumReconnectionTime: Duration?
    /// The language forms opened by this client speak (`lang=`, a BCP 47 tag such as "de"):
    /// every message and requirement text in their events. Nil: the server's default, English.
    public let language: String?

    public init(
        baseURL: URL,
        session: URLSession = .shared,
        reconnectionTime: Duration = .seconds(2),
        maximumReconnectionTime: Duration? = nil,
        language: String? = nil
    ) {
        self.language = language
        self.baseURL = baseURL
        self.session = session
        self.reconnectionTime = reconnectionTime
        self.maximumReconnectionTime = maximumReconnectionTime
    }

    /// `POST /sessions`: a fresh form token from the server (JSON, `{"token":…}`), as the
    /// page's own script gets one. The form session is built on the server at the first edit
    /// or stream.
    /// - Throws: `SignupClientError.http` for a non-2xx answer (e.g. 429 over the page limit),
    ///   `.missingToken` when the answer has no token, or the URLSession error.
    public func openForm() async throws -> FormSession {
        var request = URLRequest(url: url(path: "sessions"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let (data, response) = try await send(request)
        guard (200..<300).contains(response.statusCode) else {
            throw SignupClientError.http(status: response.statusCode, body: data)
        }
        struct Answer: Decodable { var token: String }
        guard let token = try? JSONDecoder().decode(Answer.self, from: data).token, !token.isEmpty else {
            throw SignupClientError.missingToken
        }
        return FormSession(client: self, token: token)
    }

    /// `baseURL` plus a path component and an optional urlencoded query.
    func url(path: String, query: [(name: String, value: String)] = []) -> URL {
        let url = baseURL.appendingPathComponent(path)
        guard !query.isEmpty, var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return url
        }
        // Our own encoder, since URLComponents leaves "+" and "&"-safe characters unescaped.
        components.percentEncodedQuery = FormURLEncoder.encode(query)
        return components.url ?? url
    }

    /// Sends a request and insists on an HTTP answer.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else {
            throw SignupClientError.invalidResponse("not an HTTP response")
        }
        return (data, http)
    }
}
