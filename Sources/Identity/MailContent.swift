import Foundation
import SignupDomain
import WebKernel

/// What a mail says, in its language: the same words become its text and its HTML part.
package struct MailContent {
    /// Its two parts' templates.
    package static let templates = ["mail.txt", "mail.html"]

    package var subject: String
    package var heading: String
    package var lead: String
    package var code: String?
    package var linkLead: String?
    package var linkURL: String?
    package var linkText: String?
    package var after: [String]
    package var footer: String

    package init(subject: String, heading: String, lead: String, code: String?, linkLead: String?, linkURL: String?, linkText: String?, after: [String], footer: String) {
        self.subject = subject
        self.heading = heading
        self.lead = lead
        self.code = code
        self.linkLead = linkLead
        self.linkURL = linkURL
        self.linkText = linkText
        self.after = after
        self.footer = footer
    }
}

extension PageRenderer {
    /// The mail's text and HTML parts (`mail.txt` and `mail.html` templates).
    package func render(_ mail: MailContent, language: Languages.Language) -> (text: String, html: String) {
        // Absent keys, not empty strings, for the sections a mail lacks: Mustache shows a
        // section for any string, "" included.
        var context: [String: Any] = [
            "lang": language.tag, "dir": language.catalog.direction, "serviceName": serviceName,
            "subject": mail.subject, "heading": mail.heading, "lead": mail.lead,
            "after": mail.after, "footer": mail.footer,
        ]
        context["code"] = mail.code
        context["linkLead"] = mail.linkLead
        context["linkURL"] = mail.linkURL
        context["linkText"] = mail.linkText
        return (render(template: "mail.txt", context), render(template: "mail.html", context))
    }
}
