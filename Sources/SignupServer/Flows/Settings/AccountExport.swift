import Foundation
import Identity
import SignupDomain
import WebAuthn
import WebKernel

/// `GET /account/export`: what the store holds about one account, as its owner takes it away
/// (GDPR art. 20). Public parts only: no password hash, no session id or its hash, no secret.
struct AccountExport {
    let account: Account
    let sessions: [SignInSessionSummary]
    let passkeys: [Passkey]
    /// The identities from OpenID providers linked to it (issue 45): who each provider says it is.
    let providerLinks: [ProviderLink]
    /// This browser's session (its id hash), marked as such.
    let currentSession: String?
    /// The policy's checkbox fields: a true one in the profile was agreed to when the account was made.
    let consentFields: Set<String>
    let exportedAt: Date

    private struct Document: Encodable {
        struct AccountPart: Encodable {
            let id: String
            let username: String
            let email: String
            let email_verified_at: String?
            let created_at: String
            let has_password: Bool
            let profile: [String: ProfileValue]
        }
        struct Consent: Encodable {
            let field: String
            let accepted_at: String
        }
        struct Session: Encodable {
            let device: String
            let network: String
            let signed_in_at: String
            let last_used_at: String
            let expires_at: String
            let this_browser: Bool
        }
        struct PasskeyPart: Encodable {
            let name: String
            let credential_id: String
            let public_key: String
            let algorithm: Int
            let transports: [String]
            let synced: Bool
            let created_at: String
            let last_used_at: String?
        }
        struct ProviderPart: Encodable {
            let provider: String
            let issuer: String
            let subject: String
            let email: String
            let linked_at: String
        }
        let format: String
        let exported_at: String
        let account: AccountPart
        let consents: [Consent]
        let sessions: [Session]
        let passkeys: [PasskeyPart]
        let providers: [ProviderPart]
    }

    var json: String {
        let formatter = ISO8601DateFormatter()
        func at(_ date: Date) -> String { formatter.string(from: date) }
        let document = Document(
            format: "livesignup-account-export/1",
            exported_at: at(exportedAt),
            account: .init(id: String(account.id), username: account.username, email: account.email,
                           email_verified_at: account.emailVerifiedAt.map(at), created_at: at(account.createdAt),
                           has_password: account.hasPassword, profile: account.profile),
            consents: account.profile.keys.sorted().compactMap { key in
                guard consentFields.contains(key), account.profile[key] == .bool(true) else { return nil }
                return .init(field: key, accepted_at: at(account.createdAt))
            },
            sessions: sessions.map { session in
                .init(device: session.device, network: session.network, signed_in_at: at(session.createdAt),
                      last_used_at: at(session.lastSeenAt), expires_at: at(session.expiresAt),
                      this_browser: session.idHash == currentSession)
            },
            passkeys: passkeys.map { passkey in
                .init(name: passkey.name, credential_id: Base64URL.encode(passkey.credentialID),
                      public_key: Base64URL.encode(passkey.publicKey), algorithm: passkey.algorithm,
                      transports: passkey.transports, synced: passkey.isBackedUp, created_at: at(passkey.createdAt),
                      last_used_at: passkey.lastUsedAt.map(at))
            },
            providers: providerLinks.map { link in
                .init(provider: link.provider, issuer: link.issuer, subject: link.subject, email: link.email,
                      linked_at: at(link.linkedAt))
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        return String(decoding: (try? encoder.encode(document)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
