import Crypto
import Foundation

/// Where an outbox event goes: each channel has its own delivery thread, retries and metrics.
public enum OutboxChannel: String, Sendable, CaseIterable {
    /// Standard Webhooks to the operator's receiver.
    case webhook
    /// Mails to people (codes, notices), sealed (`OutgoingMail.sealed`).
    case mail
    /// Mails about accounts that exist (recovery codes, "your password was changed"), sealed
    /// the same way, on a lane of their own: a flood of recovery requests never delays the
    /// code a person signing up waits for.
    case accountMail = "account_mail"
    /// OpenID Connect Back-Channel Logout to the applications that asked for it (issue 56):
    /// a session they hold has ended.
    case backchannelLogout = "backchannel_logout"
}

/// A message for the world outside (a webhook, a mail), written to the store's outbox in the
/// same transaction as the change it announces, so the change never exists without it.
/// Delivered at least once, later, by whoever claims it (`EventOutbox.claimDueEvents`).
public struct OutboxEvent: Sendable, Equatable {
    /// `msg_` and 32 random hex digits: the `webhook-id`, the same on every attempt.
    public let id: String
    /// "account.created", "mail.verification", "mail.address_in_use".
    public let type: String
    /// What is delivered: a webhook's JSON body `{"type":…,"timestamp":…,"data":{…}}`; a
    /// mail sealed with the outbox key (it may hold a code).
    public let body: String
    public let createdAt: Date
    public let channel: OutboxChannel

    public init(id: String, type: String, body: String, createdAt: Date, channel: OutboxChannel = .webhook) {
        self.id = id
        self.type = type
        self.body = body
        self.createdAt = createdAt
        self.channel = channel
    }

    /// `account.created`: the account's id, username, email, creation time and stored profile
    /// (never its password hash).
    /// `method` says how the account was made: `password`, `passkey` or `provider` (then
    /// `provider` names which one, by its configured id).
    public static func accountCreated(_ account: Account, provider: String? = nil) -> OutboxEvent {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let created = formatter.string(from: account.createdAt)
        let data = "{\"id\":\"\(account.id)\",\"username\":\(jsonString(account.username)),"
            + "\"email\":\(jsonString(account.email)),\"created_at\":\"\(created)\","
            + "\"email_verified\":\(account.emailVerifiedAt != nil),"
            + "\"method\":\"\(provider != nil ? "provider" : account.hasPassword ? "password" : "passkey")\","
            + (provider.map { "\"provider\":\(jsonString($0))," } ?? "")
            + "\"profile\":\(ProfileValue.json(account.profile))}"
        let body = "{\"type\":\"account.created\",\"timestamp\":\"\(created)\",\"data\":\(data)}"
        return OutboxEvent(id: makeID(), type: "account.created", body: body, createdAt: account.createdAt)
    }

    /// `account.password_reset`: the account's password was replaced through a recovery, and
    /// every signed-in session of it ended in the same transaction. Says only what happened
    /// and when, never the password or its hash.
    public static func passwordReset(_ account: Account, at date: Date) -> OutboxEvent {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let at = formatter.string(from: date)
        let data = "{\"id\":\"\(account.id)\",\"username\":\(jsonString(account.username)),"
            + "\"email\":\(jsonString(account.email)),\"reset_at\":\"\(at)\"}"
        let body = "{\"type\":\"account.password_reset\",\"timestamp\":\"\(at)\",\"data\":\(data)}"
        return OutboxEvent(id: makeID(), type: "account.password_reset", body: body, createdAt: date)
    }

    /// Who made a change an `accountChange` event announces.
    public enum Actor: String, Sendable {
        /// The account's owner, on `/account`.
        case owner
        /// The operator, with `signup-server accounts`.
        case `operator`
    }

    /// A change to an existing account: `account.password_changed`, `account.passkey_added`,
    /// `account.passkey_removed`, `account.deleted`, `account.disabled`, `account.enabled`.
    /// The account's id, username and email, when, and who (`owner` or `operator`); never a
    /// password, a hash or a key.
    /// - Parameter clientID: the application it is about (`account.application_allowed`,
    ///   `account.application_removed`, issue 56), added to `data` as `client_id`.
    public static func accountChange(_ type: String, _ account: Account, at date: Date, by actor: Actor,
                                     clientID: String? = nil) -> OutboxEvent {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let at = formatter.string(from: date)
        let data = "{\"id\":\"\(account.id)\",\"username\":\(jsonString(account.username)),"
            + "\"email\":\(jsonString(account.email)),\"at\":\"\(at)\",\"by\":\"\(actor.rawValue)\""
            + (clientID.map { ",\"client_id\":\(jsonString($0))" } ?? "") + "}"
        let body = "{\"type\":\"\(type)\",\"timestamp\":\"\(at)\",\"data\":\(data)}"
        return OutboxEvent(id: makeID(), type: type, body: body, createdAt: date)
    }

    public static func makeID() -> String {
        var generator = SystemRandomNumberGenerator()
        return "msg_" + (0..<16).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max, using: &generator)) }.joined()
    }

    private static func jsonString(_ text: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])) ?? Data("[\"\"]".utf8)
        let array = String(decoding: data, as: UTF8.self)
        return String(array.dropFirst().dropLast())
    }
}

/// An outbox event claimed for an attempt, with how many attempts it has had.
public struct ClaimedEvent: Sendable, Equatable {
    public let event: OutboxEvent
    public let attempts: Int

    public init(event: OutboxEvent, attempts: Int) {
        self.event = event
        self.attempts = attempts
    }
}

/// How the outbox stands, for metrics.
public struct OutboxStatus: Sendable, Equatable {
    public let pending: Int
    public let parked: Int
    public let oldestPendingCreatedAt: Date?

    public init(pending: Int, parked: Int, oldestPendingCreatedAt: Date?) {
        self.pending = pending
        self.parked = parked
        self.oldestPendingCreatedAt = oldestPendingCreatedAt
    }
}

/// The Standard Webhooks signature (standardwebhooks.com): HMAC-SHA256 with the secret's
/// bytes over `id.timestamp.body`, base64, as `v1,<signature>`.
public struct WebhookSecret: Sendable, Equatable {
    public let key: [UInt8]

    /// `whsec_` and base64 of 24 to 64 random bytes; nil (with a reason) otherwise.
    public static func parse(_ text: String) -> Result<WebhookSecret, WebhookSecretError> {
        guard text.hasPrefix("whsec_") else { return .failure(WebhookSecretError("must start with whsec_")) }
        guard let bytes = Data(base64Encoded: String(text.dropFirst("whsec_".count))) else {
            return .failure(WebhookSecretError("must be whsec_ followed by base64"))
        }
        guard (24...64).contains(bytes.count) else {
            return .failure(WebhookSecretError("must hold 24 to 64 bytes (it holds \(bytes.count)); e.g. whsec_$(openssl rand -base64 32)"))
        }
        return .success(WebhookSecret(key: [UInt8](bytes)))
    }

    public init(key: [UInt8]) {
        self.key = key
    }

    /// The `webhook-signature` value for one attempt.
    public func signature(id: String, timestamp: Int, body: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(id).\(timestamp).\(body)".utf8), using: SymmetricKey(data: key))
        return "v1," + Data(mac).base64EncodedString()
    }
}

public struct WebhookSecretError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}
