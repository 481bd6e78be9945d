import Foundation
import MicroHTTPD
import SignupDomain

/// `/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §3): where each
/// endpoint is and what the provider supports, every URL from the configured issuer.
struct DiscoveryDocument: Sendable {
    let issuer: @Sendable () -> String
    /// The languages the pages speak (`ui_locales`).
    let languages: [String]
    /// What ID tokens are signed with: ES256, and RS256 when an application asked for it.
    let algorithms: [String]

    private struct Document: Encodable {
        let issuer, authorization_endpoint, token_endpoint, userinfo_endpoint, jwks_uri: String
        let revocation_endpoint, introspection_endpoint, end_session_endpoint: String
        let backchannel_logout_supported = true
        let backchannel_logout_session_supported = true
        let response_types_supported = ["code"]
        let response_modes_supported = ["query"]
        let grant_types_supported = ["authorization_code", "refresh_token"]
        let subject_types_supported = ["public"]
        let id_token_signing_alg_values_supported: [String]
        let scopes_supported = ClientDeclaration.supportedScopes
        let claims_supported = ["sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "acr", "amr", "azp", "sid",
                                "preferred_username", "email", "email_verified"]
        let token_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post", "none"]
        let revocation_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post", "none"]
        let introspection_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post"]
        let code_challenge_methods_supported = ["S256"]
        let prompt_values_supported = AuthorizationRequest.Prompt.allCases.map(\.rawValue)
        let ui_locales_supported: [String]
        let claims_parameter_supported = false
        let request_parameter_supported = false
        let request_uri_parameter_supported = false
        let authorization_response_iss_parameter_supported = true
    }

    func response() -> HTTPResponse {
        let base = issuer()
        let document = Document(
            issuer: base, authorization_endpoint: base + OpenIDProviderFlow.Path.authorize,
            token_endpoint: base + OpenIDProviderFlow.Path.token, userinfo_endpoint: base + OpenIDProviderFlow.Path.userinfo,
            jwks_uri: base + OpenIDProviderFlow.Path.keySet, revocation_endpoint: base + OpenIDProviderFlow.Path.revoke,
            introspection_endpoint: base + OpenIDProviderFlow.Path.introspect, end_session_endpoint: base + OpenIDProviderFlow.Path.logout,
            id_token_signing_alg_values_supported: algorithms, ui_locales_supported: languages)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var response = HTTPResponse(status: .ok, contentType: "application/json", body: Array((try? encoder.encode(document)) ?? Data()))
        response.headers.add("Cache-Control", "public, max-age=300")
        return response
    }
}
