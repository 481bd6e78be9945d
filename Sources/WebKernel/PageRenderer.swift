import Foundation
import MicroHTTPD
import Mustache
import SignupDomain

/// A page a flow shows: the template that draws it and what it fills in beyond what every
/// page shares. Each flow keeps its pages beside its handlers (`SignInPage` in Flows/Login)
/// and lists them (`Flow.pages`), so the server checks at start that each has its template.
package protocol PageView: SendableMetatype {
    /// Its template's name in Templates/, without ".mustache".
    static var template: String { get }
    /// Adds this page's values to the shared ones (`PageContext`), or replaces them.
    func fill(_ context: inout PageContext)
}

/// What a page's template reads: the values every page shares (the language's texts as
/// `{{t.key_with_underscores}}`, its tag and direction, the site's name, the switcher, the
/// providers' buttons), then the page's own.
package struct PageContext {
    package let language: Languages.Language
    package let assets: StaticAssets
    package let renderer: PageRenderer
    package fileprivate(set) var values: [String: Any]

    /// A template value; nil leaves it absent (Mustache shows a section for any string, "" too).
    package subscript(key: String) -> Any? {
        get { values[key] }
        set { values[key] = newValue }
    }

    /// Sets many values at once (a page that replaces most of the shared ones).
    package mutating func merge(_ more: [String: Any]) {
        values.merge(more) { _, new in new }
    }

    /// The language's texts, for pages that assemble their own.
    package var text: PageTexts { PageTexts(language: language, serviceName: renderer.serviceName) }

    /// "Error: {title}" when the page reports a problem (screen readers hear it first): the
    /// language's own pattern, not a prefix glued on.
    package func title(_ title: String, failed: Bool) -> String {
        failed ? text("page.error_title", ["title": .text(title)]) : title
    }
}

/// A page's texts by key: the language's own, the key itself when it has none (a visible
/// slip, never an empty label), with the site's name where a text names it (`{service}`).
package struct PageTexts {
    package let language: Languages.Language
    package let serviceName: String

    package func callAsFunction(_ key: String) -> String { language.text(key, service: serviceName) }

    /// A text filled in by the language's rules (plurals, dates, names isolated for direction).
    package func callAsFunction(_ key: String, _ values: [String: MessageValue]) -> String {
        language.text(key, values, service: serviceName)
    }

    /// The same, as HTML for a page (`HTMLSentence`): words escaped, names in `<bdi>`, dates in `<time>`.
    package func html(_ key: String, _ values: [String: MessageValue]) -> String {
        language.html(key, values, service: serviceName)
    }
}

/// Renders the HTML pages from the Mustache templates in Templates/: the shared part of every
/// page here, each page's own part in its flow (`PageView`).
package struct PageRenderer: Sendable {
    package enum LoadError: Error, CustomStringConvertible {
        case missingTemplate(String, directory: String)
        package var description: String {
            switch self {
            case .missingTemplate(let name, let directory):
                return "Template '\(name).mustache' not found in \(directory)"
            }
        }
    }

    /// The templates the kernel itself renders (`Pages.problem`).
    package static let ownTemplates = [ProblemPage.template]

    private let library: MustacheLibrary
    /// The site's name every page shows: the policy's `service_name`.
    package let serviceName: String
    /// The OpenID providers offered on the sign-up and sign-in pages (id, name), in the
    /// policy's order: plain forms, so they work without JavaScript.
    package let providers: [(id: String, name: String)]

    /// Every language the server speaks (tag, its own name), for the switcher on each page.
    package let languageNames: [(tag: String, name: String)]

    /// `required`: the templates the server's pages and mails use; a missing one stops the
    /// start, not a visitor's request later.
    package init(directory: URL, required: [String], serviceName: String = Policy.defaults.serviceName,
         languageNames: [(tag: String, name: String)] = [], providers: [(id: String, name: String)] = []) throws {
        self.serviceName = serviceName
        self.languageNames = languageNames
        self.providers = providers
        var templates: [String: MustacheTemplate] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
        where name.hasSuffix(".mustache") {
            let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            templates[String(name.dropLast(".mustache".count))] = try MustacheTemplate(string: text)
        }
        for name in required where templates[name] == nil {
            throw LoadError.missingTemplate(name, directory: directory.path)
        }
        library = MustacheLibrary(templates: templates)
    }

    /// `view` in `language`: the shared values, then the page's own, through its template.
    package func render(_ view: some PageView, language: Languages.Language, assets: StaticAssets) -> String {
        var context = PageContext(language: language, assets: assets, renderer: self, values: shared(language, assets: assets))
        view.fill(&context)
        // "Page – Service" in the language's own pattern, the service's name isolated: a
        // Latin brand keeps its place in an Arabic tab title.
        let pageTitle = context["pageTitle"] as? String ?? context["title"] as? String ?? ""
        context["documentTitle"] = context.text("page.document_title", ["page": .text(pageTitle)])
        return render(template: type(of: view).template, context.values)
    }

    /// A template with values built elsewhere (the mails' two parts).
    package func render(template: String, _ values: [String: Any]) -> String {
        library.render(values, withTemplate: template) ?? ""
    }

    /// What every page shares: the language's texts (`{{t.key_with_underscores}}`), its
    /// tag and direction, and `langQuery` for links that keep the language.
    private func shared(_ language: Languages.Language, assets: StaticAssets) -> [String: Any] {
        [
            "t": Dictionary(uniqueKeysWithValues: language.catalog.texts.map {
                ($0.key.replacingOccurrences(of: ".", with: "_"), $0.value)
            }),
            "lang": language.tag, "dir": language.catalog.direction,
            "langQuery": Self.languageQuery(language),
            "serviceName": serviceName, "stylesheetURL": assets.url(for: "style.css"),
            "hasProviders": !providers.isEmpty, "providers": providerButtons(language),
            // The switcher (Templates/languages.mustache): each language in its own name, on
            // this page (`?lang=`).
            "hasLanguages": languageNames.count > 1,
            "languageLinks": languageLinks(language),
        ]
    }

    /// The switcher's links: `path` (this page when "") in each language (`?lang=`), with what
    /// the page's own address must keep (`query`, as "token=…&").
    package func languageLinks(_ language: Languages.Language, path: String = "", query: String = "") -> [[String: Any]] {
        languageNames.map { ["tag": $0.tag, "name": $0.name, "isCurrent": $0.tag == language.tag,
                             "href": "\(path)?\(query)lang=\($0.tag)"] }
    }

    /// Each provider's button in `language` ("Continue with …"), as HTML: the provider's
    /// name in `<bdi>`.
    package func providerButtons(_ language: Languages.Language) -> [[String: String]] {
        let words = language.catalog["provider.continue"] ?? "{provider}"
        return providers.map { ["id": $0.id, "labelHTML": HTMLSentence.fill(words, ["provider": .name($0.name)], language: language.tag)] }
    }

    /// "?lang=de" for links that keep a language other than English; "" for English.
    package static func languageQuery(_ language: Languages.Language) -> String {
        language.tag == Languages.fallback ? "" : "?lang=\(language.tag)"
    }

    /// A text's words before and after a placeholder (all before when it has none).
    package static func split(_ text: String, at placeholder: String) -> (before: String, after: String) {
        guard let range = text.range(of: placeholder) else { return (text, "") }
        return (String(text[..<range.lowerBound]), String(text[range.upperBound...]))
    }

    /// The query for a link to the other form (sign-in ↔ sign-up) that keeps the language and
    /// carries `return_to` along (last, percent-encoded).
    package static func query(languageQuery: String, returnTo: String?) -> String {
        guard let returnTo, !returnTo.isEmpty else { return languageQuery }
        let encoded = returnTo.addingPercentEncoding(withAllowedCharacters: .urlUnreservedCharacters) ?? ""
        return (languageQuery.isEmpty ? "?" : languageQuery + "&") + "return_to=" + encoded
    }

    /// Text for a double-quoted HTML attribute. Bytes, not characters: every `GET /` escapes
    /// its proof-of-work challenge (some 200 bytes of JSON) this way, and appending Character
    /// by Character (grapheme breaking, a seam check per append) cost about 200,000
    /// instructions a page. The five characters escaped are ASCII, so no multi-byte character
    /// is ever cut; and a quote followed by a combining mark, one Character that no longer
    /// compared equal to `"`, can no longer pass unescaped.
    package static func escapeAttribute(_ text: String) -> String {
        var contiguous = text
        return contiguous.withUTF8 { bytes in
            guard bytes.contains(where: { escapedAttributeBytes[Int($0)] != nil }) else { return text }
            var escaped: [UInt8] = []
            escaped.reserveCapacity(bytes.count + 32)
            for byte in bytes {
                if let replacement = escapedAttributeBytes[Int(byte)] {
                    escaped.append(contentsOf: replacement)
                } else {
                    escaped.append(byte)
                }
            }
            return String(decoding: escaped, as: UTF8.self)
        }
    }

    /// What `escapeAttribute` writes for each byte (nil: the byte itself).
    private static let escapedAttributeBytes: [[UInt8]?] = (0...255).map { byte -> [UInt8]? in
        switch UInt8(byte) {
        case UInt8(ascii: "&"): Array("&amp;".utf8)
        case UInt8(ascii: "\""): Array("&quot;".utf8)
        case UInt8(ascii: "'"): Array("&#39;".utf8)
        case UInt8(ascii: "<"): Array("&lt;".utf8)
        case UInt8(ascii: ">"): Array("&gt;".utf8)
        default: nil
        }
    }
}

/// A page that explains why a request was refused (too fast, another site, shutting down)
/// and where to go next. `code` is the same machine-readable code JSON errors use.
package struct ProblemPage: PageView {
    package static let template = "problem"
    package var title: String
    package var message: String
    package var code: String
    package var linkURL = "/"
    package var linkText: String?

    package func fill(_ context: inout PageContext) {
        context["title"] = title
        context["message"] = message
        context["code"] = code
        context["linkURL"] = linkURL + PageRenderer.languageQuery(context.language)
        context["linkText"] = linkText ?? context.language.catalog["problem.back"] ?? ""
    }
}

extension CharacterSet {
    /// RFC 3986's unreserved characters: what a query value keeps as is.
    package static let urlUnreservedCharacters = CharacterSet(charactersIn:
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
