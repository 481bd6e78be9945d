import Crypto
import Foundation
import OutsideMail
import SignupDomain
import WebKernel

/// A mail as the outbox keeps it until a mail server takes it: the message without its sender
/// (the operator's `--mail-from` when it goes, so a changed setting applies to mails already
/// waiting), and when it stops being worth sending.
package struct OutgoingMail: Sendable, Equatable, Codable {
    /// Everything but `from`, which is empty here. Its `Message-ID` is the same on every
    /// attempt, so a mail server that took it twice can tell.
    package var message: MailMessage
    /// After this there is no point in sending it (the code in it no longer works).
    package var expiresAt: Date?

    package init(message: MailMessage, expiresAt: Date?) {
        self.message = message
        self.expiresAt = expiresAt
    }

    /// This mail as an outbox event of `type`, sealed with `key` (ChaCha20-Poly1305): a
    /// verification mail holds a live code, and the table it waits in must not give it away
    /// to whoever can read the database.
    package func sealed(type: String, key: SymmetricKey, channel: OutboxChannel = .mail) throws -> OutboxEvent {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        let box = try ChaChaPoly.seal(try encoder.encode(self), using: key)
        return OutboxEvent(id: OutboxEvent.makeID(), type: type, body: box.combined.base64EncodedString(),
                           createdAt: message.date, channel: channel)
    }

    /// The mail sealed in `event`; throws when the key is not the one it was sealed with or
    /// the body is damaged.
    package static func unsealed(_ event: OutboxEvent, key: SymmetricKey) throws -> OutgoingMail {
        guard let combined = Data(base64Encoded: event.body) else { throw MailFailure("the outbox body is not base64") }
        let plain = try ChaChaPoly.open(try ChaChaPoly.SealedBox(combined: combined), using: key)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try decoder.decode(OutgoingMail.self, from: plain)
    }

    /// A fresh `Message-ID` in the sender's domain.
    package static func makeMessageID(domain: String) -> String {
        "<\(OutboxEvent.makeID().dropFirst(4))@\(domain)>"
    }
}
