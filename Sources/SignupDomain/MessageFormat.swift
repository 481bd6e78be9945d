import Foundation
import MessageFormatShims

/// One value a catalog text is filled in with: a count (plurals choose by it), words of the
/// same language, a name someone supplied, or a moment.
public enum MessageValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case number(Int)
    /// Words that belong to the sentence's language (another catalog text, a code).
    case text(String)
    /// A value a person or an operator supplied: a username, an address, the service's, a
    /// provider's, a device's or a passkey's name. Its direction is its own, so it is isolated
    /// (FSI…PDI in text, `<bdi>` in pages): a Latin name stays whole and in place inside an
    /// Arabic sentence, and an Arabic name cannot reorder the English around it.
    case name(String)
    /// A moment, written as the language writes a date and time (ICU), in UTC.
    case date(Date)

    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int) { self = .number(value) }

    /// As a simple `{name}` placeholder shows it in `language` (digits as they are: texts
    /// that group or choose by a number say so in ICU's syntax).
    func plain(language tag: String) -> String {
        switch self {
        case .number(let number): return String(number)
        case .text(let text): return text
        case .name(let name): return MessageFormat.isolated(name)
        case .date(let date): return MessageFormat.date(date, language: tag)
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
        guard usesICU(template) else { return plainFill(template, values, language: tag) }
        return format(template, values, locale: icuLocale(tag)) ?? plainFill(template, values, language: tag)
    }

    /// The first strong character's direction, kept to itself: U+2068 FIRST STRONG ISOLATE
    /// before, U+2069 POP DIRECTIONAL ISOLATE after (Unicode's bidirectional algorithm, UAX #9).
    /// Direction controls inside the value are dropped first: an unmatched PDI in a name would
    /// end its isolation early and let the rest reorder the sentence.
    public static func isolated(_ name: String) -> String {
        let kept = withoutDirectionControls(name)
        return kept.isEmpty ? "" : "\u{2068}" + kept + "\u{2069}"
    }

    /// `name` without the characters that set direction: what `isolated` wraps, and what a
    /// page puts in `<bdi>`.
    public static func withoutDirectionControls(_ name: String) -> String {
        guard name.unicodeScalars.contains(where: { directionControls.contains($0.value) }) else { return name }
        return String(String.UnicodeScalarView(name.unicodeScalars.filter { !directionControls.contains($0.value) }))
    }

    /// LRM, RLM, ALM, the embeddings and overrides (U+202A–U+202E) and the isolates (U+2066–U+2069).
    private static let directionControls: Set<UInt32> = [0x200E, 0x200F, 0x061C, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
                                                           0x2066, 0x2067, 0x2068, 0x2069]

    /// `date` as `language` writes a date and time: ICU's pattern for day, month, year, hour
    /// and minute in that language ("Nov 3, 2026, 10:00 AM UTC", "3. Nov. 2026, 10:00 UTC",
    /// "2026年11月3日 10:00 UTC"), in UTC (the server does not know the reader's zone, so the
    /// zone is written where the language puts it), with the language's digits as
    /// `icuLocale` chooses them (Western in Arabic, as the counts beside it).
    public static func date(_ date: Date, language tag: String) -> String {
        self.date(date, locale: icuLocale(tag))
    }

    static func date(_ date: Date, locale: String) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
        return readICU { buffer, capacity in message_format_date(milliseconds, locale, "UTC", buffer, capacity) }
            ?? ISO8601DateFormatter().string(from: date)
    }

    /// `items` joined as `language` joins a list of things that all hold ("a, b, and c",
    /// "a, b und c", "a、b和c"): ICU's list formatting. Items are used as given (isolate names
    /// first).
    public static func list(_ items: [String], language tag: String) -> String {
        guard items.count > 1 else { return items.first ?? "" }
        var copies = items.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        return copies.withUnsafeMutableBufferPointer { pointers in
            pointers.withMemoryRebound(to: UnsafePointer<CChar>?.self) { items in
                readICU { buffer, capacity in
                    message_format_list(icuLocale(tag), items.baseAddress, Int32(items.count), buffer, capacity)
                }
            }
        } ?? items.joined(separator: ", ")
    }

    /// What an ICU shim writes into a buffer it may ask to be larger; nil when it fails.
    private static func readICU(_ write: (UnsafeMutablePointer<CChar>, Int32) -> Int32) -> String? {
        var capacity: Int32 = 256
        while true {
            var buffer = [CChar](repeating: 0, count: Int(capacity))
            let length = buffer.withUnsafeMutableBufferPointer { write($0.baseAddress!, capacity) }
            if length < 0 { return nil }
            if length < capacity { return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self) }
            capacity = length + 1
        }
    }

    /// Whether a text uses MessageFormat's own syntax (a plural, a select, a number format).
    public static func usesICU(_ template: String) -> Bool {
        template.contains(", plural,") || template.contains(", select,") || template.contains(", selectordinal,")
            || template.contains(", number")
    }

    /// Each `{name}` the values have, replaced in one pass over the bytes: a value is never
    /// read again for placeholders (an address holding "{username}" stays as typed), and no
    /// Foundation search runs per value (the account page's 50 device lines spent a fifth of
    /// their time in `replacingOccurrences`, issue 58).
    static func plainFill(_ template: String, _ values: [String: MessageValue], language tag: String) -> String {
        let bytes = Array(template.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 64)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "{"),
               let close = bytes[(index + 1)...].prefix(64).firstIndex(of: UInt8(ascii: "}")),
               let value = values[String(decoding: bytes[(index + 1)..<close], as: UTF8.self)] {
                output.append(contentsOf: value.plain(language: tag).utf8)
                index = close + 1
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
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
            // ICU is given names and dates as the words they become: its own `{d, date}` would
            // use the process's zone and the language's default digits.
            case .name(let text):
                let copy = strdup(isolated(text))
                strings.append(copy)
                arguments.append(message_argument(name: key, is_number: 0, number: 0, text: copy))
            case .date(let date):
                let copy = strdup(self.date(date, locale: locale))
                strings.append(copy)
                arguments.append(message_argument(name: key, is_number: 0, number: 0, text: copy))
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
