import Crypto
import FormWire
import Foundation
import MicroHTTPD
import WebAuthn
import WebKernel

/// What a sign-in through an OpenID provider keeps in the browser between its steps (issue
/// 45), sealed with ChaCha20-Poly1305 under a key in the store, so any instance opens what
/// another sealed, nothing is stored for a flow nobody finishes, and the browser can neither
/// read nor change it. Each kind is sealed with its cookie's name as associated data: one
/// kind never opens as another.
package struct ProviderCookies: Sendable {
    private let key: SymmetricKey
    package let secure: Bool
    package let now: @Sendable () -> Date

    package init(key: [UInt8], secure: Bool, now: @escaping @Sendable () -> Date) {
        self.key = SymmetricKey(data: key)
        self.secure = secure
        self.now = now
    }

    package static func makeKey() -> [UInt8] { SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) } }

    /// From the start to the provider's answer: which provider, the `state`, `nonce` and PKCE
    /// verifier sent, what the flow is for, and where it leads; only the callback reads it.
    /// Ten minutes: a person logging in at their provider is quick.
    package struct Flow: Codable, Sendable, Equatable {
        package enum Intent: String, Codable, Sendable {
            /// Sign in, or sign up if nobody is linked.
            case signin
            /// Link to the signed-in account (from `/account`).
            case link
            /// Confirm who the signed-in person is (a recent sign-in, for an account without a password).
            case confirm
        }
        package var provider: String
        package var state: String
        package var nonce: String
        package var verifier: String
        package var intent: Intent
        /// The signed-in account a link or a confirmation is for.
        package var account: Int64?
        /// A validated `return_to` (sign-in), or the continuation's name (confirm).
        package var returnTo: String?
        package var language: String
        package var issuedAt: Date

        package init(provider: String, state: String, nonce: String, verifier: String, intent: Intent, account: Int64?, returnTo: String?, language: String, issuedAt: Date) {
            self.provider = provider
            self.state = state
            self.nonce = nonce
            self.verifier = verifier
            self.intent = intent
            self.account = account
            self.returnTo = returnTo
            self.language = language
            self.issuedAt = issuedAt
        }
    }

    /// Who the provider said the person is, waiting for the sign-up form to be sent (`signup`)
    /// or for a sign-in to an existing account to link it (`link`): the form's edits and its
    /// post read it, or the sign-in.
    package struct Identity: Codable, Sendable, Equatable {
        package enum Purpose: String, Codable, Sendable { case signup, link }
        package var purpose: Purpose
        package var provider: String
        package var issuer: String
        package var subject: String
        package var email: String
        /// The provider said it proved the address (`email_verified`). Whether that proves it
        /// here is decided when the sign-up is sent, from the configuration then (issue 52): an
        /// operator who stops trusting the provider is obeyed at once, not after the cookie.
        package var providerSaysVerified: Bool
        package var issuedAt: Date

        package init(purpose: Purpose, provider: String, issuer: String, subject: String, email: String, providerSaysVerified: Bool, issuedAt: Date) {
            self.purpose = purpose
            self.provider = provider
            self.issuer = issuer
            self.subject = subject
            self.email = email
            self.providerSaysVerified = providerSaysVerified
            self.issuedAt = issuedAt
        }
    }

    package static let flowCookie = "livesignup_provider_flow"
    package static let identityCookie = "livesignup_provider_identity"

    /// Over TLS each cookie is `__Host-` (Secure, Path=/, no Domain): a neighbouring host
    /// under the same parent domain cannot plant a flow or an identity in this site's
    /// browsers (which could otherwise sign someone in as the planter, or link the planter's
    /// identity). Without TLS (local tests) the plain names.
    private func name(_ base: String) -> String { secure ? "__Host-" + base : base }
    package static let flowLifetime: TimeInterval = 10 * 60
    package static let identityLifetime: TimeInterval = 30 * 60

    package func flowCookie(_ flow: Flow?) -> String {
        cookie(name(Self.flowCookie), flow.map { seal($0, as: Self.flowCookie) } ?? "", lifetime: Self.flowLifetime)
    }

    package func identityCookie(_ identity: Identity?) -> String {
        cookie(name(Self.identityCookie), identity.map { seal($0, as: Self.identityCookie) } ?? "", lifetime: Self.identityLifetime)
    }

    package func flow(in request: HTTPRequest) -> Flow? {
        open(request, name(Self.flowCookie), sealedAs: Self.flowCookie, lifetime: Self.flowLifetime, issuedAt: \.issuedAt)
    }

    package func identity(in request: HTTPRequest, for purpose: Identity.Purpose) -> Identity? {
        open(request, name(Self.identityCookie), sealedAs: Self.identityCookie, lifetime: Self.identityLifetime, issuedAt: \.issuedAt)
            .flatMap { $0.purpose == purpose ? $0 : nil }
    }

    private func cookie(_ name: String, _ value: String, lifetime: TimeInterval) -> String {
        // Lax: the provider's answer is a top-level GET from its site, which Lax lets through.
        let cookie = SetCookie(name, value, path: "/", maxAge: Int(lifetime), sameSite: .lax, secure: secure)
        return value.isEmpty ? cookie.cleared.header : cookie.header
    }

    private func seal<Value: Encodable>(_ value: Value, as name: String) -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        guard let plain = try? encoder.encode(value),
              let box = try? ChaChaPoly.seal(plain, using: key, authenticating: Data(name.utf8)) else { return "" }
        return Base64URL.encode(Array(box.combined))
    }

    /// The one cookie of that name, ours, whole and younger than `lifetime`.
    private func open<Value: Decodable>(_ request: HTTPRequest, _ name: String, sealedAs kind: String, lifetime: TimeInterval,
                                        issuedAt: KeyPath<Value, Date>) -> Value? {
        let values = request.cookieValues(named: name)
        guard values.count == 1, values[0].utf8.count <= 4096, let combined = Base64URL.decode(values[0]).map({ Data($0) }),
              let box = try? ChaChaPoly.SealedBox(combined: combined),
              let plain = try? ChaChaPoly.open(box, using: key, authenticating: Data(kind.utf8)) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        guard let value = try? decoder.decode(Value.self, from: plain) else { return nil }
        let age = now().timeIntervalSince(value[keyPath: issuedAt])
        return age < lifetime && age > -5 ? value : nil
    }
}
