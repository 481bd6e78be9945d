import Foundation

/// An application LiveSignup signs people in to as its OpenID provider (issue 56), as the
/// operator declares it (`clients:` in the policy, or the configuration file's
/// `policy.rules`). The secret itself is never in the file: a confidential client names the
/// variable it is read from; a public one (a phone app, a single-page app) has none and must
/// use PKCE.
public struct ClientDeclaration: Sendable, Equatable {
    /// What the application sends as `client_id`: `[A-Za-z0-9._-]`, 1 to 64.
    public var id: String
    /// Shown to the person: on the consent page and the account's list of applications.
    public var name: String
    /// Where codes may be sent, compared byte for byte (no prefix, no pattern: OAuth 2.0
    /// Security BCP §4.1.3).
    public var redirectURIs: [String]
    /// Where RP-initiated logout may return, compared the same way.
    public var postLogoutRedirectURIs: [String] = []
    /// The scopes it may be granted (`openid` always among them).
    public var scopes: [String] = ClientDeclaration.supportedScopes
    /// The operator's own application: no consent page (the person already trusts it).
    public var firstParty = false
    /// The variable its secret is read from at start (`client_secret_env`); nil for a public
    /// client.
    public var secretVariable: String?
    /// Where it is told, server to server, that a session it holds has ended (OpenID
    /// Connect Back-Channel Logout 1.0).
    public var backchannelLogoutURI: String?
    /// What its ID tokens (and logout tokens) are signed with: ES256, or RS256 for an
    /// application that cannot verify anything else (`id_token_signed_response_alg`).
    public var idTokenAlgorithm = "ES256"

    public init(id: String, name: String, redirectURIs: [String]) {
        self.id = id
        self.name = name
        self.redirectURIs = redirectURIs
    }

    /// Without a secret: it proves itself with PKCE alone.
    public var isPublic: Bool { secretVariable == nil }

    /// The scopes LiveSignup grants: who (`openid`, `profile`), the address (`email`), and
    /// staying signed in to the application (`offline_access`, refresh tokens).
    public static let supportedScopes = ["openid", "profile", "email", "offline_access"]

    /// The longest redirect URI a client may register or send (bounded before any work).
    public static let maximumURILength = 2048

    /// A secret someone could guess is no proof: 32 characters is 128 bits or more of any
    /// generator's output.
    public static let minimumSecretLength = 32

    /// Why the server cannot start with `secret` as this client's; nil when it can (or the
    /// client is public and needs none).
    public func problem(withSecret secret: String?) -> String? {
        guard let variable = secretVariable else { return nil }
        guard let secret, !secret.isEmpty else {
            return "The application '\(id)' needs its client secret in the environment variable \(variable) (or \(variable)_FILE), which is not set; a client that cannot keep a secret is declared public: true."
        }
        guard secret.count >= Self.minimumSecretLength else {
            return "The application '\(id)''s client secret (\(variable)) is \(secret.count) characters; give at least \(Self.minimumSecretLength) (openssl rand -hex 32)."
        }
        return nil
    }

    /// Whether `id` is one a client may have.
    public static func isValidID(_ id: String) -> Bool {
        id.wholeMatch(of: #/[A-Za-z0-9._-]{1,64}/#) != nil
    }

    /// Why `uri` cannot be a redirect URI; nil when it can: absolute, https (http only on
    /// loopback, for development), no fragment (RFC 6749 §3.1.2), within the length bound.
    public static func problem(withRedirectURI uri: String) -> String? {
        guard uri.utf8.count <= maximumURILength else { return "is longer than \(maximumURILength) bytes" }
        guard let url = URL(string: uri), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            return "must be an absolute URL"
        }
        guard url.fragment == nil, !uri.contains("#") else { return "must not have a fragment" }
        guard scheme == "https" || (scheme == "http" && PolicyFileReader.isLoopback(host)) else {
            return "must be https (http only on loopback)"
        }
        return nil
    }
}
