import Crypto
import Foundation

/// A mail to one person, as the outbox keeps it until a mail server takes it: the recipient,
/// the subject, the same words as text and HTML, and the `Message-ID` every attempt reuses
/// (so a mail server that took it twice can tell). The sender is the operator's setting at
/// delivery time.
public struct OutgoingMail: Sendable, Equatable, Codable {
    public var to: String
    public var subject: String
    public var text: String
    public var html: String
    /// `<random@domain>`.
    public var messageID: String
    public var date: Date
    /// After this there is no point in sending it (the code in it no longer works).
    public var expiresAt: Date?

    public init(to: String, subject: String, text: String, html: String, messageID: String, date: Date, expiresAt: Date? = nil) {
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
        self.messageID = messageID
        self.date = date
        self.expiresAt = expiresAt
    }

    /// This mail as an outbox event of `type`, sealed with `key` (ChaCha20-Poly1305): a
    /// verification mail holds a live code, and the table it waits in must not give it away
    /// to whoever can read the database.
    public func sealed(type: String, key: SymmetricKey) throws -> OutboxEvent {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        let box = try ChaChaPoly.seal(try encoder.encode(self), using: key)
        return OutboxEvent(id: OutboxEvent.makeID(), type: type, body: box.combined.base64EncodedString(),
                           createdAt: date, channel: .mail)
    }

    /// The mail sealed in `event`; throws when the key is not the one it was sealed with or
    /// the body is damaged.
    public static func unsealed(_ event: OutboxEvent, key: SymmetricKey) throws -> OutgoingMail {
        guard let combined = Data(base64Encoded: event.body) else { throw MailSealError("the outbox body is not base64") }
        let plain = try ChaChaPoly.open(try ChaChaPoly.SealedBox(combined: combined), using: key)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try decoder.decode(OutgoingMail.self, from: plain)
    }

    /// A fresh `Message-ID` in the sender's domain.
    public static func makeMessageID(domain: String) -> String {
        "<\(OutboxEvent.makeID().dropFirst(4))@\(domain)>"
    }
}

public struct MailSealError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
