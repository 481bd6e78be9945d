import ArgumentParser
import Foundation
import OutsideMail

/// Operator commands for mail.
struct Mail: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the mail settings.",
        subcommands: [Test.self])

    struct Test: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send one test mail through the SMTP server, to see the settings work before people depend on them.")

        @Option(help: help("smtp-url", "smtp://[user@]host[:port] (STARTTLS when offered) or smtps://…; the password in LIVESIGNUP_SMTP_PASSWORD."))
        var smtpUrl: String

        @Flag(help: help("smtp-require-tls", "Refuse to send unless STARTTLS succeeds, even to a mail server on this machine (smtps:// always encrypts). Without it TLS is required anyway for any server not on loopback."))
        var smtpRequireTls = false

        @Flag(help: help("smtp-allow-plaintext", "Send without TLS when a mail server that is not on loopback offers no STARTTLS (the password, codes and links then cross the network readable; logged as a warning at start)."))
        var smtpAllowPlaintext = false

        @Option(help: help("smtp-ca-file", "PEM certificates to trust for the mail server instead of the system's."))
        var smtpCaFile: String?

        @Option(help: help("mail-from", "The sender, e.g. 'Example <noreply@example.org>'."))
        var mailFrom: String

        @Option(help: "Where the test mail goes.")
        var to: String

        func validate() throws {
            guard let url = URL(string: smtpUrl), SMTPTransport.check(url) == nil else {
                throw ValidationError("--smtp-url \(URL(string: smtpUrl).flatMap(SMTPTransport.check) ?? "is not a URL"): '\(smtpUrl)'.")
            }
            for (flag, address) in [("--mail-from", mailFrom), ("--to", to)] where !address.contains("@") {
                throw ValidationError("\(flag) must hold an email address, not '\(address)'.")
            }
        }

        func run() throws {
            let url = URL(string: smtpUrl)!
            if let warning = MailOptions.plaintextWarning(url, requireTLS: smtpRequireTls, allowPlaintext: smtpAllowPlaintext) {
                FileHandle.standardError.write(Data("warning: \(warning)\n".utf8))
            }
            let transport = SMTPTransport(
                url: url, password: try ConfigurationSources.secret(.smtpPassword),
                requireTLS: SMTPTransport.mustEncrypt(url, requireTLS: smtpRequireTls, allowPlaintext: smtpAllowPlaintext), caFile: smtpCaFile)
            let message = MailMessage(
                from: mailFrom, to: to, subject: "LiveSignup: Testnachricht / test message ✓",
                text: "This is a test message from signup-server mail test.\nDie Einstellungen funktionieren.\n",
                html: "<p>This is a test message from <code>signup-server mail test</code>.</p><p>Die Einstellungen funktionieren.</p>",
                messageID: "<\(UUID().uuidString.lowercased())@\(MailMessage.domain(ofMailbox: mailFrom))>", date: Date())
            do {
                try transport.send(message)
            } catch {
                throw ValidationError("\(error)")
            }
            print("Sent a test mail to \(to) through \(URL(string: smtpUrl)?.host ?? smtpUrl).")
        }
    }
}
