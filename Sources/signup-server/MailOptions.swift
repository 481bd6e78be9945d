import ArgumentParser
import Foundation
import Identity
import OutsideMail
import SignupServer

/// Proving email addresses: whether, and where the mails go.
struct MailOptions: ParsableArguments {
    @Option(help: help("email-verification"))
    var emailVerification: String?

    @Option(help: help("smtp-url"))
    var smtpUrl: String?

    @Flag(help: help("smtp-require-tls"))
    var smtpRequireTls = false

    @Flag(help: help("smtp-allow-plaintext"))
    var smtpAllowPlaintext = false

    @Option(help: help("smtp-ca-file"))
    var smtpCaFile: String?

    @Option(help: help("mail-dir"))
    var mailDir: String?

    @Option(help: help("mail-from"))
    var mailFrom: String?

    @Option(help: help("verification-minutes"))
    var verificationMinutes = 30

    @Option(help: help("verification-resend-seconds"))
    var verificationResendSeconds = 60

    @Option(help: help("recovery-minutes"))
    var recoveryMinutes = 15

    @Option(help: help("mail-first-retry-seconds"))
    var mailFirstRetrySeconds = 5

    @Option(help: help("mail-retry-hours"))
    var mailRetryHours = 24

    func validate() throws {
        if let emailVerification, !["required", "off"].contains(emailVerification) {
            throw ValidationError("--email-verification is required or off, not '\(emailVerification)'.")
        }
        if smtpUrl != nil, mailDir != nil {
            throw ValidationError("Choose one mail transport: --smtp-url or --mail-dir, not both.")
        }
        if let smtpUrl {
            guard let url = URL(string: smtpUrl), SMTPTransport.check(url) == nil else {
                throw ValidationError("--smtp-url \(URL(string: smtpUrl).flatMap(SMTPTransport.check) ?? "is not a URL"): '\(smtpUrl)'.")
            }
            guard mailFrom != nil else {
                throw ValidationError("--smtp-url needs --mail-from: the address mails come from, e.g. 'Example <noreply@example.org>'.")
            }
        }
        if let smtpCaFile, !FileManager.default.isReadableFile(atPath: smtpCaFile) {
            throw ValidationError("--smtp-ca-file: cannot read '\(smtpCaFile)'.")
        }
        if let mailFrom, !mailFrom.contains("@") {
            throw ValidationError("--mail-from must hold an email address, not '\(mailFrom)'.")
        }
        if emailVerification == "required", smtpUrl == nil, mailDir == nil {
            throw ValidationError("--email-verification required needs a way to send the codes: --smtp-url or --mail-dir.")
        }
        guard (5...24 * 60).contains(verificationMinutes) else {
            throw ValidationError("--verification-minutes must be 5 to 1440 (a day).")
        }
        guard (0...3600).contains(verificationResendSeconds) else {
            throw ValidationError("--verification-resend-seconds must be 0 to 3600.")
        }
        guard (5...24 * 60).contains(recoveryMinutes) else {
            throw ValidationError("--recovery-minutes must be 5 to 1440 (a day).")
        }
        guard (1...3600).contains(mailFirstRetrySeconds) else {
            throw ValidationError("--mail-first-retry-seconds must be 1 to 3600.")
        }
        guard (1...24 * 7).contains(mailRetryHours) else {
            throw ValidationError("--mail-retry-hours must be 1 to 168 (a week).")
        }
    }

    /// What to warn the operator about when mail may leave unencrypted, or nil.
    static func plaintextWarning(_ url: URL, requireTLS: Bool, allowPlaintext: Bool) -> String? {
        // Warned when the flag is what lets mail go plain: TLS would be required without it.
        guard url.scheme?.lowercased() == "smtp", SMTPTransport.mustEncrypt(url, requireTLS: requireTLS, allowPlaintext: false),
              !SMTPTransport.mustEncrypt(url, requireTLS: requireTLS, allowPlaintext: allowPlaintext) else { return nil }
        return "--smtp-allow-plaintext: mail to \(url.host ?? "the mail server") goes unencrypted when it offers no STARTTLS; "
            + "its password, the codes and the links can then be read on the way"
    }

    /// The warning for this configuration's transport, if any.
    var plaintextWarning: String? {
        guard let smtpUrl, let url = URL(string: smtpUrl) else { return nil }
        return Self.plaintextWarning(url, requireTLS: smtpRequireTls, allowPlaintext: smtpAllowPlaintext)
    }

    /// The settings, or nil when addresses are not proved.
    func settings(serviceName: String) -> EmailVerificationSettings? {
        guard emailVerification != "off" else { return nil }
        let transport: any MailTransport
        if let smtpUrl, let url = URL(string: smtpUrl) {
            transport = SMTPTransport(url: url, password: try? ConfigurationSources.secret(.smtpPassword),
                                      requireTLS: SMTPTransport.mustEncrypt(url, requireTLS: smtpRequireTls, allowPlaintext: smtpAllowPlaintext), caFile: smtpCaFile)
        } else if let mailDir {
            transport = MailDirectoryTransport(directory: URL(fileURLWithPath: mailDir))
        } else {
            return nil
        }
        var mail = MailSettings(transport: transport, from: mailFrom ?? "\(serviceName) <noreply@localhost>")
        mail.schedule.retryWindow = TimeInterval(mailRetryHours * 3600)
        mail.schedule.firstRetryDelay = TimeInterval(mailFirstRetrySeconds)
        var settings = EmailVerificationSettings(mail: mail)
        settings.codeLifetime = TimeInterval(verificationMinutes * 60)
        settings.resendCooldown = TimeInterval(verificationResendSeconds)
        settings.recoveryLifetime = TimeInterval(recoveryMinutes * 60)
        return settings
    }
}
