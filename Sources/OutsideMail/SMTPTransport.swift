import CurlShims
import Foundation

/// One mail: a sender, one recipient, a subject, and the same words as text and as HTML.
public struct MailMessage: Sendable, Equatable, Codable {
    /// "Service name <noreply@example.org>" or a bare address.
    public var from: String
    public var to: String
    public var subject: String
    public var text: String
    public var html: String
    /// `<random@sender-domain>`; the same on every attempt of one mail.
    public var messageID: String
    public var date: Date
    /// The language the mail is written in ("de", "pt-br"): its `Content-Language` (RFC
    /// 3282). Nil in mails sealed before it was kept: then no such header.
    public var language: String?

    public init(from: String, to: String, subject: String, text: String, html: String, messageID: String, date: Date,
                language: String? = nil) {
        self.language = language
        self.from = from
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
        self.messageID = messageID
        self.date = date
    }

    /// The bare address inside "Name <address>" (or the text itself).
    static func address(in mailbox: String) -> String {
        guard let open = mailbox.lastIndex(of: "<"), let close = mailbox.lastIndex(of: ">"), open < close else {
            return mailbox.trimmingCharacters(in: .whitespaces)
        }
        return String(mailbox[mailbox.index(after: open)..<close])
    }

    /// The domain of "Name <user@domain>" or "user@domain" (for `Message-ID`s); "localhost"
    /// when it has none.
    public static func domain(ofMailbox mailbox: String) -> String {
        address(in: mailbox).split(separator: "@").last.map(String.init) ?? "localhost"
    }

    /// The header lines, non-ASCII words encoded as RFC 2047 says (`=?UTF-8?B?…?=`), and
    /// `Auto-Submitted: auto-generated` (RFC 3834) so auto-responders stay quiet.
    var headerLines: [String] {
        [
            "From: \(Self.encodedMailbox(from))", "To: \(Self.encodedMailbox(to))",
            "Subject: \(Self.encodedWords(subject))", "Date: \(Self.rfc5322Date(date))",
            "Message-ID: \(messageID)", "Auto-Submitted: auto-generated", "MIME-Version: 1.0",
        ] + (language.flatMap(Self.contentLanguage).map { ["Content-Language: \($0)"] } ?? [])
    }

    /// A tag as a header may carry it (RFC 5646's letters, digits and hyphens only), in its
    /// usual case ("pt-BR", "zh-Hans"); nil for anything else.
    static func contentLanguage(_ tag: String) -> String? {
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false)
        guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty && $0.count <= 8 && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
        else { return nil }
        return parts.enumerated().map { index, part in
            index == 0 ? part.lowercased() : part.count == 4 ? part.prefix(1).uppercased() + part.dropFirst().lowercased()
                : part.count == 2 ? part.uppercased() : part.lowercased()
        }.joined(separator: "-")
    }

    /// A display name and address, the name encoded when it is not plain ASCII.
    static func encodedMailbox(_ mailbox: String) -> String {
        guard let open = mailbox.lastIndex(of: "<") else { return mailbox }
        let name = mailbox[..<open].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return String(mailbox[open...]) }
        return "\(encodedWords(name)) \(mailbox[open...])"
    }

    /// Text for a header: as is when printable ASCII, else one RFC 2047 encoded word per
    /// 45 bytes of UTF-8 (each encoded line stays under 76 characters).
    static func encodedWords(_ text: String) -> String {
        if text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) { return text }
        var words: [String] = []
        var chunk = ""
        for character in text {
            if chunk.utf8.count + String(character).utf8.count > 45 {
                words.append(chunk)
                chunk = ""
            }
            chunk.append(character)
        }
        if !chunk.isEmpty { words.append(chunk) }
        return words.map { "=?UTF-8?B?\(Data($0.utf8).base64EncodedString())?=" }.joined(separator: "\r\n ")
    }

    static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}

public struct MailFailure: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// The mail server refused this mail for good (a 5xx reply about the recipient or the
    /// message: no such mailbox, refused as spam): sending it again cannot help. Anything
    /// else (no answer, a timeout, a 4xx, a refused login the operator can fix) may pass later.
    public let isPermanent: Bool

    public init(_ description: String, isPermanent: Bool = false) {
        self.description = description
        self.isPermanent = isPermanent
    }
}

/// Something that takes mails away: a mail server, or a folder of `.eml` files.
public protocol MailTransport: Sendable {
    func send(_ message: MailMessage) throws(MailFailure)
}

/// Sends mail through an SMTP server with libcurl (no SMTP written by hand): `smtp://` with
/// STARTTLS required (`requireTLS`; see `mustEncrypt` for when it may be skipped), `smtps://` for TLS from the
/// first byte, AUTH when the URL names a user (`smtp://user@host:587`; the password apart, from
/// the environment), and one total timeout per mail.
public struct SMTPTransport: MailTransport {
    public let url: URL
    public let password: String?
    public let requireTLS: Bool
    /// PEM certificates to trust instead of the system's (a private mail server's CA).
    public let caFile: String?
    public let timeout: TimeInterval

    public init(url: URL, password: String? = nil, requireTLS: Bool = false, caFile: String? = nil, timeout: TimeInterval = 20) {
        self.url = url
        self.password = password
        self.requireTLS = requireTLS
        self.caFile = caFile
        self.timeout = timeout
    }

    /// Whether mail to `url` must be encrypted. STARTTLS "when offered" is no protection: a
    /// man in the middle strips the offer and reads the AUTH password, the codes and the
    /// links. So TLS is required unless the mail server is on this machine (a loopback relay,
    /// which no one on the network can reach into) or the operator allowed plain text.
    public static func mustEncrypt(_ url: URL, requireTLS: Bool, allowPlaintext: Bool) -> Bool {
        requireTLS || !(allowPlaintext || isLoopback(url.host))
    }

    /// `localhost`, 127.0.0.0/8 or ::1, as the URL names the host (no name is resolved).
    public static func isLoopback(_ host: String?) -> Bool {
        guard let host = host?.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")) else { return false }
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// `smtp://[user@]host[:port]` or `smtps://…`; a reason otherwise.
    public static func check(_ url: URL) -> String? {
        guard ["smtp", "smtps"].contains(url.scheme?.lowercased() ?? ""), let host = url.host, !host.isEmpty else {
            return "must be smtp://[user@]host[:port] or smtps://…"
        }
        guard url.path.isEmpty || url.path == "/" else { return "must not have a path" }
        return nil
    }

    public func send(_ message: MailMessage) throws(MailFailure) {
        // The user goes to libcurl apart from the URL (so a password never sits in one).
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let user = components?.user?.removingPercentEncoding
        components?.user = nil
        components?.password = nil
        let address = components?.url?.absoluteString ?? url.absoluteString
        let lines = message.headerLines.map { strdup($0) }
        defer { lines.forEach { free($0) } }
        var error = [CChar](repeating: 0, count: 256)
        var reply = 0
        let code = address.withCString { address in
            lines.map { UnsafePointer($0) }.withUnsafeBufferPointer { headers in
                withOptionalCString(user) { user in
                    withOptionalCString(password) { password in
                        withOptionalCString(caFile) { caFile in
                            MailMessage.address(in: message.from).withCString { from in
                                MailMessage.address(in: message.to).withCString { to in
                                    message.text.withCString { text in
                                        message.html.withCString { html in
                                            var mail = curl_shim_mail(
                                                url: address, username: user, password: password,
                                                require_tls: requireTLS ? 1 : 0, ca_file: caFile,
                                                timeout_ms: max(1, Int(timeout * 1000)),
                                                envelope_from: from, envelope_to: to,
                                                headers: headers.baseAddress, header_count: headers.count,
                                                text: text, html: html)
                                            return curl_shim_send_mail(&mail, &reply, &error, error.count)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        guard code == 0 else {
            let words = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // 550–555 and 501: the mailbox, the address or the message was refused (RFC 5321
            // §4.2.2). 535 (login refused) and the rest are the operator's to fix: retried.
            let permanent = (550...555).contains(reply) || reply == 501
            throw MailFailure("\(url.host ?? "the mail server") did not take the mail: \(words)"
                              + (reply > 0 ? " (reply \(reply))" : ""), isPermanent: permanent)
        }
    }
}

private func withOptionalCString<T>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
