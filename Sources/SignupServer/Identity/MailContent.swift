import Foundation
import SignupDomain
import WebKernel

/// What a mail says, in its language: the same words become its text and its HTML part.
struct MailContent {
    /// Its two parts' templates.
    static let templates = ["mail.txt", "mail.html"]

    var subject: String
    var heading: String
    var lead: String
    var code: String?
    var linkLead: String?
    var linkURL: String?
    var linkText: String?
    var after: [String]
    var footer: String
}

extension PageRenderer {
    /// The mail's text and HTML parts (`mail.txt` and `mail.html` templates).
    func render(_ mail: MailContent, language: Languages.Language) -> (text: String, html: String) {
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
