import Foundation
import SignupDomain

/// The languages the server speaks: English, built in (`TextCatalog.builtInEnglish`, the
/// fallback for any text another catalog lacks), and one `TextCatalog` per file in the
/// templates folder's `i18n/` (an `en.yaml` there replaces texts of the built-in English), with
/// the policy's rules in each. Picks a visitor's language from `?lang=` or `Accept-Language`.
package struct Languages: Sendable {
    package struct Language: Sendable {
        package let catalog: TextCatalog
        package let policy: FormPolicy
        package var tag: String { catalog.language }

        /// `template` (one of this language's texts) filled in by its rules: a count chooses
        /// the language's plural form (`MessageFormat`).
        package func filled(_ template: String, _ values: [String: MessageValue]) -> String {
            MessageFormat.fill(template, values, language: tag)
        }

        /// The text for `key` (the key itself when there is none: a visible slip, never an
        /// empty label), `{service}` the operator's service name, isolated for direction. Put
        /// in plainly, not through ICU: a plural in the same text is filled in later, whole.
        package func text(_ key: String, service: String) -> String {
            let text = catalog[key] ?? key
            return text.contains("{service}") ? text.replacingOccurrences(of: "{service}", with: MessageFormat.isolated(service)) : text
        }

        /// The text for `key` filled in by the language's rules; `{service}` is the service's
        /// name unless `values` give another.
        package func text(_ key: String, _ values: [String: MessageValue], service: String) -> String {
            MessageFormat.fill(catalog[key] ?? key, values.merging(["service": .name(service)]) { given, _ in given }, language: tag)
        }

        /// The same as HTML for a page's own sentence (`HTMLSentence`: names in `<bdi>`, dates in `<time>`).
        package func html(_ key: String, _ values: [String: MessageValue], service: String) -> String {
            HTMLSentence.fill(catalog[key] ?? key, values.merging(["service": .name(service)]) { given, _ in given }, language: tag)
        }
    }

    package static let fallback = "en"

    /// Keys English no longer has, and the whole sentence that replaced each (issue 58: a word
    /// glued before a date or a name, or a separator put between texts, read wrong in other
    /// languages), for the message that stops a start with an older catalog.
    package static let retiredKeys: [String: String] = [
        "page.error_prefix": "page.error_title (\"Error: {title}\")",
        "account.network": "account.device_details_network",
        "account.began": "account.device_details and account.device_details_network",
        "account.last_used": "account.device_details, account.passkey_details and account.end_label",
        "account.passkey_created": "account.passkey_details and account.passkey_details_unused",
        "account.passkey_never_used": "account.passkey_details_unused",
        "account.provider_linked_at": "account.provider_details",
    ]
    /// In the switcher's order (English first, then by tag).
    package let all: [Language]
    private let byTag: [String: Language]

    package enum LoadError: Error, CustomStringConvertible {
        case unknownKeys(file: String, keys: [String])
        case catalog(PolicyFileError)
        case policyLanguagesWithoutCatalog(tags: [String], directory: String)
        /// Two files say they are the same language (a leftover copy, a misnamed file).
        case sameLanguageTwice(tag: String, files: [String])

        package var description: String {
            switch self {
            case .unknownKeys(let file, let keys):
                // A key an upgrade retired says what took its place: an operator's copy of an
                // older catalog is the likeliest reason, not a typo.
                let retired = keys.compactMap { key in Languages.retiredKeys[key].map { "\(key) is now \($0)" } }
                return "\(file): texts English does not have (a typo?): \(keys.joined(separator: ", "))"
                    + (retired.isEmpty ? "" : " (an older catalog: \(retired.joined(separator: "; ")))")
            case .catalog(let error):
                return "\(error)"
            case .sameLanguageTwice(let tag, let files):
                return "\(files.joined(separator: " and ")) are both language '\(tag)': keep one (a file is named after its language, \(tag).yaml)"
            case .policyLanguagesWithoutCatalog(let tags, let directory):
                return "The policy has texts for \(tags.joined(separator: ", ")), but \(directory) has no catalog for \(tags.count == 1 ? "it" : "them") (\(tags.map { "\($0).yaml" }.joined(separator: ", "))): a typo, or a language this server does not speak"
            }
        }
    }

    /// Reads every `*.yaml` in `directory`; a catalog missing some texts takes English's.
    /// `pseudoLocale`: also speak the pseudo-locale (`PseudoLocale`, `en-xa`), for tests.
    package init(directory: URL, policy: FormPolicy, builtInEnglish: TextCatalog = .builtInEnglish, pseudoLocale: Bool = false) throws {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { $0.hasSuffix(".yaml") }.sorted()
        var catalogs: [TextCatalog] = []
        var fileOf: [String: String] = [:]
        for file in files {
            let catalog: TextCatalog
            do {
                catalog = try TextCatalog.load(path: directory.appendingPathComponent(file).path)
            } catch {
                throw LoadError.catalog(error)
            }
            if let other = fileOf[catalog.language] { throw LoadError.sameLanguageTwice(tag: catalog.language, files: [other, file]) }
            fileOf[catalog.language] = file
            catalogs.append(catalog)
        }
        if !catalogs.contains(where: { $0.language == Self.fallback }) { catalogs.append(builtInEnglish) }
        // An operator's own en-xa file, if any, stands (two of one language would stop the start).
        if pseudoLocale, fileOf[PseudoLocale.tag] == nil { catalogs.append(PseudoLocale.catalog(from: builtInEnglish)) }
        let english = builtInEnglish
        var languages: [Language] = []
        for catalog in catalogs {
            let unknown = catalog.texts.keys.filter { english.texts[$0] == nil }.sorted()
            if !unknown.isEmpty {
                throw LoadError.unknownKeys(file: directory.appendingPathComponent("\(catalog.language).yaml").path, keys: unknown)
            }
            // A catalog written before the advice had keys translates it by English sentence.
            var texts = catalog.texts
            for (sentence, translation) in catalog.feedback {
                guard let key = Self.adviceKeys[sentence] else {
                    throw LoadError.unknownKeys(file: directory.appendingPathComponent("\(catalog.language).yaml").path,
                                                keys: ["feedback: \(sentence)"])
                }
                if texts[key] == nil { texts[key] = translation }
            }
            let complete = TextCatalog(language: catalog.language, name: catalog.name, direction: catalog.direction,
                                       texts: english.texts.merging(texts) { $1 })
            languages.append(Language(catalog: complete, policy: policy.localized(complete.policyTexts, language: catalog.language)))
        }
        let spoken = Set(catalogs.map(\.language))
        let unspoken = policy.settings.languageTags.subtracting(spoken).sorted()
        if !unspoken.isEmpty {
            throw LoadError.policyLanguagesWithoutCatalog(tags: unspoken, directory: directory.path)
        }
        all = languages.sorted { ($0.tag == Self.fallback ? "" : $0.tag) < ($1.tag == Self.fallback ? "" : $1.tag) }
        byTag = Dictionary(uniqueKeysWithValues: languages.map { ($0.tag, $0) })
    }

    package var english: Language { byTag[Self.fallback]! }

    /// The built-in English advice's keys by sentence: how an older catalog's `feedback:`
    /// entries find their keys.
    private static let adviceKeys: [String: String] = Dictionary(
        TextCatalog.builtInEnglish.texts.filter { PolicyTexts.isAdviceKey($0.key) }.map { ($0.value, $0.key) },
        uniquingKeysWith: { first, _ in first })

    /// The language for `tag` exactly (case-insensitive), or its primary language ("de-AT" →
    /// "de"), if the server has it.
    package func language(_ tag: String?) -> Language? {
        guard let tag = tag?.lowercased(), !tag.isEmpty else { return nil }
        if let exact = byTag[tag] { return exact }
        guard let primary = tag.split(separator: "-").first.map(String.init) else { return nil }
        if let general = byTag[primary] { return general }
        // The one variety the server has of that language: "zh", "zh-CN" and "zh-SG" read
        // zh-hans, "pt" and "pt-PT" pt-br. Traditional Chinese is another script, not a
        // variety: "zh-TW", "zh-HK", "zh-MO" and "zh-Hant" go on to the next wish.
        if primary == "zh", ["tw", "hk", "mo", "hant"].contains(where: { tag.split(separator: "-").dropFirst().contains(Substring($0)) }) {
            return nil
        }
        let varieties = all.filter { $0.tag.split(separator: "-").first.map(String.init) == primary }
        return varieties.count == 1 ? varieties[0] : nil
    }

    /// `?lang=` if the server has it, else the best of `Accept-Language` by its weights, else
    /// English.
    package func negotiate(requested: String?, acceptLanguage: String?) -> Language {
        if let chosen = language(requested) { return chosen }
        for tag in Self.preferences(acceptLanguage ?? "") {
            if let match = language(tag) { return match }
        }
        return english
    }

    /// `Accept-Language`'s tags, most wanted first; q=0 means "not this one".
    package static func preferences(_ header: String) -> [String] {
        var ranked: [(tag: String, weight: Double, order: Int)] = []
        for (order, part) in header.split(separator: ",").prefix(32).enumerated() {
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let tag = pieces.first, !tag.isEmpty, tag != "*" else { continue }
            var weight = 1.0
            for parameter in pieces.dropFirst() where parameter.hasPrefix("q=") {
                weight = Double(parameter.dropFirst(2)) ?? 0
            }
            if weight > 0 { ranked.append((tag, weight, order)) }
        }
        return ranked.sorted { $0.weight != $1.weight ? $0.weight > $1.weight : $0.order < $1.order }.map(\.tag)
    }
}

extension String {
    /// This text of `language` filled in by its rules (see `Languages.Language.filled`).
    package func filled(_ values: [String: MessageValue], in language: Languages.Language) -> String {
        language.filled(self, values)
    }
}
