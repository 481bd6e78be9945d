import Foundation

/// Writes each mail as an `.eml` file (RFC 5322, multipart/alternative) into a folder instead
/// of sending it: for development (`make run`) and for operators who hand mail to another
/// program. Any mail client opens the files. A file appears whole or not at all (written
/// under a temporary name, then renamed).
public struct MailDirectoryTransport: MailTransport {
    public let directory: URL

    public init(directory: URL) {
        self.directory = directory
    }

    public func send(_ message: MailMessage) throws(MailFailure) {
        let name = Self.fileName(for: message)
        let temporary = directory.appendingPathComponent(".\(name).partial")
        let final = directory.appendingPathComponent(name)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(message.rfc5322().utf8).write(to: temporary)
            // The same Message-ID again (a retry after a crash) replaces the earlier file.
            if FileManager.default.fileExists(atPath: final.path) { try FileManager.default.removeItem(at: final) }
            try FileManager.default.moveItem(at: temporary, to: final)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw MailFailure("could not write \(final.path): \(error.localizedDescription)")
        }
    }

    /// "20261124T101500Z-<message id's letters>.eml": sorted by time, unique per mail.
    static func fileName(for message: MailMessage) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let id = message.messageID.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }.prefix(40)
        return "\(formatter.string(from: message.date))-\(id).eml"
    }
}

extension MailMessage {
    /// The whole message as a mail file: the headers SMTP sends, then a multipart/alternative
    /// body with the text and the HTML, each base64 in lines of 76 (RFC 2045).
    public func rfc5322() -> String {
        let boundary = "=_livesignup_" + messageID.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }
        var lines = headerLines
        lines.append("Content-Type: multipart/alternative; boundary=\"\(boundary)\"")
        lines.append("")
        for (type, content) in [("text/plain", text), ("text/html", html)] {
            lines.append("--\(boundary)")
            lines.append("Content-Type: \(type); charset=utf-8")
            lines.append("Content-Transfer-Encoding: base64")
            lines.append("")
            let encoded = Data(content.utf8).base64EncodedString()
            var start = encoded.startIndex
            while start < encoded.endIndex {
                let end = encoded.index(start, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex
                lines.append(String(encoded[start..<end]))
                start = end
            }
        }
        lines.append("--\(boundary)--")
        lines.append("")
        return lines.joined(separator: "\r\n")
    }
}
