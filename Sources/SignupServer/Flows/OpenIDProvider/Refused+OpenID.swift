import WebKernel

/// What the OpenID provider's pages refuse when the request cannot be trusted with a
/// redirect (RFC 6749 §4.1.2.1): said to the person, in their language, and never sent on.
extension Refused {
    static let unknownClient = Refused(status: .badRequest, code: "unknown_client", title: "oauth.refused_title",
                                       message: "oauth.unknown_client")
    /// An authorization request's `redirect_uri` the client did not register.
    static let unregisteredRedirect = Refused(status: .badRequest, code: "invalid_redirect_uri", title: "oauth.refused_title",
                                              message: "oauth.bad_redirect")
    /// A logout's `post_logout_redirect_uri`, or a hint of another application, likewise.
    static let unregisteredLogoutRedirect = Refused(status: .badRequest, code: "invalid_request", title: "oauth.refused_title",
                                                    message: "oauth.bad_redirect")
    /// Too large, malformed, or a hint that is not an ID token of this provider.
    static let badOAuthRequest = Refused(status: .badRequest, code: "invalid_request", title: "oauth.refused_title",
                                         message: "oauth.bad_request")
}
