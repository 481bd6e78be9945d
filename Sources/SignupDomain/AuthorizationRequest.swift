import Foundation

/// An application's authorization request (OpenID Connect Core §3.1.2.1), read and held to
/// its client's registration before anything else happens (issue 56). Pure: the flow gives
/// it the query's pairs and the registered clients, and acts on what it says.
public struct AuthorizationRequest: Sendable, Equatable {
    public let client: ClientDeclaration
    /// One of the client's registered URIs, byte for byte.
    public let redirectURI: String
    /// The scopes asked for that the client may have (others are left out, RFC 6749 §3.3).
    public let scopes: [String]
    public let state: String?
    public let nonce: String?
    /// PKCE's S256 challenge (RFC 7636): required of a public client, accepted from any.
    public let codeChallenge: String?
    public let prompts: Set<Prompt>
    /// Seconds since the person last proved who they are beyond which they must do it again.
    public let maxAge: Int?
    public let loginHint: String?
    /// The languages the application would like the pages in, in its order.
    public let uiLocales: [String]

    public enum Prompt: String, Sendable, CaseIterable {
        case none, login, consent, create
    }

    /// The query's bound: the whole request, before any of it is looked at.
    public static let maximumQueryBytes = 4096
    /// `state`, `nonce`, `login_hint` and `ui_locales` each.
    public static let maximumValueBytes = 512

    /// Why a request is refused.
    public enum Refusal: Error, Equatable, Sendable {
        /// Nothing may be sent back to the application: its id or its redirect URI cannot be
        /// trusted, so the person sees a page (RFC 6749 §4.1.2.1: never redirect then).
        case unknownClient
        case badRedirect
        case tooLarge
        /// Said to the application at its redirect URI.
        case toClient(ClientError)
    }

    /// A refusal the application is told (`error`, `error_description`) at the redirect URI
    /// already checked against its registration, with the request's `state`.
    public struct ClientError: Equatable, Sendable {
        public let error: String
        public let description: String
        public let redirectURI: String
        public let state: String?

        /// Where it is sent, with `iss` (RFC 9207).
        public func redirect(issuer: String) -> String {
            AuthorizationRequest.answer(at: redirectURI, [("error", error), ("error_description", description)]
                                                         + (state.map { [("state", $0)] } ?? []) + [("iss", issuer)])
        }
    }

    /// Reads the pairs of an authorization request's query against the registered clients.
    public static func read(_ pairs: [(name: String, value: String)], queryBytes: Int,
                            clients: [String: ClientDeclaration]) throws(Refusal) -> AuthorizationRequest {
        guard queryBytes <= maximumQueryBytes else { throw .tooLarge }
        // A parameter given twice is refused (RFC 6749 §3.1): which one counts is how
        // confused-deputy attacks on two parsers begin.
        var values: [String: String] = [:], repeated: Set<String> = []
        for (name, value) in pairs {
            if values.updateValue(value, forKey: name) != nil { repeated.insert(name) }
        }
        guard !repeated.contains("client_id"), let id = values["client_id"], let client = clients[id] else { throw .unknownClient }
        guard !repeated.contains("redirect_uri"), let redirectURI = values["redirect_uri"],
              redirectURI.utf8.count <= ClientDeclaration.maximumURILength,
              client.redirectURIs.contains(where: { Array($0.utf8) == Array(redirectURI.utf8) }) else { throw .badRedirect }
        // From here on the application is who it says and is told what went wrong.
        func refuse(_ error: String, _ description: String) -> Refusal {
            .toClient(ClientError(error: error, description: description, redirectURI: redirectURI, state: values["state"]))
        }
        if let name = repeated.sorted().first { throw refuse("invalid_request", "\(name) is given more than once") }
        if values["request"] != nil { throw refuse("request_not_supported", "request objects are not supported") }
        if values["request_uri"] != nil { throw refuse("request_uri_not_supported", "request_uri is not supported") }
        guard values["response_type"] == "code" else {
            throw refuse("unsupported_response_type", "only the code flow is supported (response_type=code)")
        }
        if let mode = values["response_mode"], mode != "query" {
            throw refuse("invalid_request", "response_mode \(mode.prefix(20)) is not supported; the answer comes in the query")
        }
        let asked = (values["scope"] ?? "").split(separator: " ").map(String.init)
        guard asked.contains("openid") else { throw refuse("invalid_scope", "the scope must include openid") }
        var seen = Set<String>()
        let scopes = asked.filter { client.scopes.contains($0) && seen.insert($0).inserted }
        for name in ["state", "nonce", "login_hint", "ui_locales"] {
            if let value = values[name], value.utf8.count > maximumValueBytes {
                throw refuse("invalid_request", "\(name) is longer than \(maximumValueBytes) bytes")
            }
        }
        let challenge = values["code_challenge"]
        switch (challenge, values["code_challenge_method"]) {
        case (nil, nil):
            if client.isPublic { throw refuse("invalid_request", "a public client must use PKCE (code_challenge with S256)") }
        case (let challenge?, "S256"?):
            // 32 bytes of SHA-256, base64url without padding: 43 characters.
            guard challenge.wholeMatch(of: #/[A-Za-z0-9_-]{43}/#) != nil else {
                throw refuse("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)")
            }
        case (_?, nil), (_?, _?):
            throw refuse("invalid_request", "code_challenge_method must be S256")
        case (nil, _?):
            throw refuse("invalid_request", "code_challenge_method without code_challenge")
        }
        var prompts = Set<Prompt>()
        for word in (values["prompt"] ?? "").split(separator: " ") {
            guard let prompt = Prompt(rawValue: String(word)) else {
                throw refuse("invalid_request", "prompt \(word.prefix(20)) is not one of none, login, consent, create")
            }
            prompts.insert(prompt)
        }
        if prompts.contains(.none), prompts.count > 1 { throw refuse("invalid_request", "prompt=none stands alone") }
        var maxAge: Int?
        if let text = values["max_age"] {
            guard let seconds = Int(text), seconds >= 0 else { throw refuse("invalid_request", "max_age must be a whole number of seconds") }
            maxAge = seconds
        }
        return AuthorizationRequest(
            client: client, redirectURI: redirectURI, scopes: scopes, state: values["state"], nonce: values["nonce"],
            codeChallenge: challenge, prompts: prompts, maxAge: maxAge, loginHint: values["login_hint"],
            uiLocales: (values["ui_locales"] ?? "").split(separator: " ").map(String.init))
    }

    /// The redirect URI with `parameters` added to its query (after any it has), each
    /// percent-encoded, and `iss` (RFC 9207: the application knows which provider answered).
    public func redirect(_ parameters: [(String, String)], issuer: String) -> String {
        Self.answer(at: redirectURI, parameters + (state.map { [("state", $0)] } ?? []) + [("iss", issuer)])
    }

    /// `uri` with `parameters` added to its query (after any it has), each percent-encoded:
    /// every answer sent back to an application (a code, an error, a logout's `state`).
    public static func answer(at uri: String, _ parameters: [(String, String)]) -> String {
        guard !parameters.isEmpty else { return uri }
        let query = parameters.map { "\($0.0)=\(encode($0.1))" }.joined(separator: "&")
        return uri + (uri.contains("?") ? "&" : "?") + query
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters.
    public static func encode(_ value: String) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}
