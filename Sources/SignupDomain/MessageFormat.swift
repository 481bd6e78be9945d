import Foundation
import MessageFormatShims

/// One value a catalog text is filled in with: a count (plurals choose by it) or words.
public enum MessageValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case number(Int)
    case text(String)

    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int) { self = .number(value) }

    /// As a simple `{name}` placeholder shows it (digits as they are: texts that group or
    /// choose by a number say so in ICU's syntax).
    var plain: String {
        switch self {
        case .number(let number): return String(number)
        case .text(let text): return text
        }
    }
}

/// Fills a catalog text in, in its language (issue 46). A text may be plain, with `{name}`
/// placeholders, or use ICU MessageFormat where a language needs it: plurals by the
/// language's own CLDR rules (`{n, plural, one {# minute} other {# minutes}}`; Polish has
/// one, few, many and other, Arabic zero, one, two, few, many and other), `select`, and
/// `{n, number}`. ICU (Debian's libicu, through MessageFormatShims) does the formatting; a
/// text it cannot read is filled in plainly rather than lost.
public enum MessageFormat {
    /// `template` with `values` filled in for the language `tag` ("en", "pt-br", "ar").
    public static func fill(_ template: String, _ values: [String: MessageValue], language tag: String) -> String {
        // Nothing to fill in: the text as written (a policy's own wording is compared so).
        guard template.contains("{"), !values.isEmpty else { return template }
        guard usesICU(template) else { return plainFill(template, values) }
        return format(template, values, locale: icuLocale(tag)) ?? plainFill(template, values)
    }

    /// Whether a text uses MessageFormat's own syntax (a plural, a select, a number format).
    public static func usesICU(_ template: String) -> Bool {
        template.contains(", plural,") || template.contains(", select,") || template.contains(", selectordinal,")
            || template.contains(", number")
    }

    static func plainFill(_ template: String, _ values: [String: MessageValue]) -> String {
        var result = template
        for (name, value) in values { result = result.replacingOccurrences(of: "{\(name)}", with: value.plain) }
        return result
    }

    /// ICU's result, or nil for a pattern it refuses.
    public static func format(_ pattern: String, _ values: [String: MessageValue], locale: String) -> String? {
        let names = values.keys.sorted()
        var strings: [UnsafeMutablePointer<CChar>?] = []
        defer { strings.forEach { free($0) } }
        var arguments: [message_argument] = []
        for name in names {
            let key = strdup(name)
            strings.append(key)
            switch values[name]! {
            case .number(let number):
                arguments.append(message_argument(name: key, is_number: 1, number: Int64(number), text: nil))
            case .text(let text):
                let copy = strdup(text)
                strings.append(copy)
                arguments.append(message_argument(name: key, is_number: 0, number: 0, text: copy))
            }
        }
        var capacity: Int32 = 512
        while true {
            var buffer = [CChar](repeating: 0, count: Int(capacity))
            let length = arguments.withUnsafeBufferPointer { args in
                message_format(pattern, locale, args.baseAddress, Int32(args.count), &buffer, capacity)
            }
            if length < 0 { return nil }
            if length < capacity { return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self) }
            capacity = length + 1
        }
    }

    /// The plural categories the language uses, by CLDR ("one other"; Arabic's six).
    public static func pluralCategories(language tag: String) -> Set<String> {
        var buffer = [CChar](repeating: 0, count: 128)
        let length = message_plural_categories(icuLocale(tag), &buffer, 128)
        guard length >= 0 else { return ["other"] }
        return Set(String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .split(separator: " ").map(String.init))
    }

    /// The category of `number` in the language ("one", "few", …).
    public static func pluralCategory(of number: Int, language tag: String) -> String {
        var buffer = [CChar](repeating: 0, count: 32)
        let length = message_plural_category(icuLocale(tag), Double(number), &buffer, 32)
        guard length >= 0 else { return "other" }
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A tag as this project spells it ("pt-br", "zh-hans") in ICU's form ("pt_BR", "zh_Hans").
    public static func icuLocale(_ tag: String) -> String {
        let parts = tag.split(separator: "-").map(String.init)
        guard let language = parts.first else { return "en" }
        let rest = parts.dropFirst().map { part -> String in
            part.count == 4 ? part.prefix(1).uppercased() + part.dropFirst().lowercased() : part.uppercased()
        }
        let locale = ([language.lowercased()] + rest).joined(separator: "_")
        // Arabic with Western digits, as the codes people type and the plain numbers on the
        // same page are: ICU's default for "ar" (Arabic-Indic digits) would mix the two.
        return language.lowercased() == "ar" ? locale + "@numbers=latn" : locale
    }
}
