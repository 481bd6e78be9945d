import Foundation
import Yams

/// Every text a person reads in one language, as data: a YAML file per language. English is
/// built in (`builtInEnglish`, this module's Resources/i18n/en.yaml: the one place English
/// wording lives); the others are Templates/i18n/<language>.yaml. `texts` holds the page's
/// and the script's texts, the policy's (`PolicyText` keys) and the advice the strength
/// estimator and the username checks give by key (`advice.*`, `username.unsafe.*`).
/// `feedback` is how catalogs written before those keys translated the advice, keyed by its
/// English sentence; it is still read (`Languages` turns it into keys). Adding a language is
/// adding a file.
public struct TextCatalog: Sendable {
    /// A BCP 47 language tag, lower case ("en", "de", "pt-br").
    public let language: String
    /// The language's own name, for the switcher ("Deutsch").
    public let name: String
    /// "ltr" or "rtl", for `<html dir>`.
    public let direction: String
    public let texts: [String: String]
    public let feedback: [String: String]

    public init(language: String, name: String, direction: String, texts: [String: String], feedback: [String: String] = [:]) {
        self.language = language
        self.name = name
        self.direction = direction
        self.texts = texts
        self.feedback = feedback
    }

    public subscript(key: String) -> String? { texts[key] }

    /// The built-in English catalog, read once from this module's resources. A build without
    /// its resource bundle cannot speak at all, so that stops here with the reason.
    public static let builtInEnglish: TextCatalog = {
        guard let url = Bundle.module.url(forResource: "en", withExtension: "yaml", subdirectory: "i18n") else {
            fatalError("The built-in English catalog (i18n/en.yaml) is missing from SignupDomain's resource bundle")
        }
        do {
            return try load(path: url.path)
        } catch {
            fatalError("The built-in English catalog cannot be read: \(error)")
        }
    }()

    /// This catalog's texts over `base`'s (a language over English, an operator's file over
    /// the built-in one); its own name and direction.
    public func over(_ base: TextCatalog) -> TextCatalog {
        TextCatalog(language: language, name: name, direction: direction,
                    texts: base.texts.merging(texts) { $1 }, feedback: base.feedback.merging(feedback) { $1 })
    }

    /// The policy's texts in this language.
    public var policyTexts: PolicyTexts {
        var replaced: [PolicyText: String] = [:]
        for text in PolicyText.allCases {
            if let value = texts[text.rawValue] { replaced[text] = value }
        }
        return PolicyTexts(replaced, feedback: texts.filter { PolicyTexts.isAdviceKey($0.key) }, language: language)
    }

    /// Reads a catalog file; refuses it with the file, line and reason like a policy file.
    public static func load(path: String) throws(PolicyFileError) -> TextCatalog {
        func fail(_ node: Node?, _ reason: String) -> PolicyFileError {
            PolicyFileError(file: path, line: node?.mark?.line, reason: reason)
        }
        let root = try PolicyFile.compose(PolicyFile.read(path: path), file: path)
        guard let mapping = root.mapping else { throw fail(root, "a catalog must be a mapping (language:, name:, direction:, texts:)") }
        var language: String?, name: String?, direction = "ltr"
        var texts: [String: String] = [:], feedback: [String: String] = [:]
        for (key, value) in mapping {
            switch key.scalar?.string {
            case "language":
                language = value.scalar?.string.lowercased()
                guard let code = language, PolicyFile.isLanguageTag(code) else {
                    throw fail(value, "'language' must be a language tag such as en, de or pt-br")
                }
            case "name":
                name = value.scalar?.string
            case "direction":
                direction = value.scalar?.string ?? ""
                guard direction == "ltr" || direction == "rtl" else { throw fail(value, "'direction' must be ltr or rtl") }
            case "texts", "feedback":
                guard let entries = value.mapping else { throw fail(value, "'\(key.scalar?.string ?? "")' must be a mapping of keys to texts") }
                var table: [String: String] = [:]
                for (textKey, textValue) in entries {
                    guard let k = textKey.scalar?.string, let v = textValue.scalar?.string, !v.isEmpty else {
                        throw fail(textValue, "each entry must be a non-empty text")
                    }
                    table[k] = v
                }
                if key.scalar?.string == "texts" { texts = table } else { feedback = table }
            default:
                throw fail(key, "unknown setting '\(key.scalar?.string ?? "")'; a catalog may have: language, name, direction, texts, feedback")
            }
        }
        guard let language else { throw fail(root, "'language' is missing") }
        guard let name, !name.isEmpty else { throw fail(root, "'name' (the language's own name) is missing") }
        return TextCatalog(language: language, name: name, direction: direction, texts: texts, feedback: feedback)
    }
}
