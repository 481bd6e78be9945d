import Identity
import MicroHTTPD
import WebKernel

/// LiveSignup as an OpenID provider for the operator's applications (issue 56). So far its
/// published key set; the endpoints that sign with it come next.
enum OpenIDProviderFlow: Flow {
    static let pages: [any PageView.Type] = []

    static func routes(_ services: Services) -> [Route] {
        let keys = services.signIn.signingKeys
        return [
            // The key set relying parties verify ID tokens with: public, cached briefly (a
            // rotated key is published a day before it signs, so a cache never misses one).
            Route(.get, "/.well-known/jwks.json", answers: .json, limits: [.pages], spentFirst: [.pages]) { _ in
                var response = HTTPResponse(status: .ok, contentType: "application/json", body: try keys.keySet())
                response.headers.add("Cache-Control", "public, max-age=300")
                return response
            },
        ]
    }

    /// Keys no token alive names are forgotten.
    static func sweeps(_ services: Services) -> [Sweep] {
        let keys = services.signIn.signingKeys
        return [Sweep(what: "signing keys past their tokens") { _ in try keys.forgetExpired() }]
    }
}
