import Foundation
import SignupDomain
import WebKernel

/// Every text of every catalog, with the names of the values it takes.
private let catalogs: [(tag: String, texts: [(text: String, names: [String])])] = {
    languages.all.map { language in
        (language.tag, language.catalog.texts.sorted { $0.key < $1.key }.map { ($0.value, placeholders(in: $0.value)) })
    }
}()

/// `{name}` and `{name, plural, …}` argument names, as a translator writes them.
private func placeholders(in text: String) -> [String] {
    var names: [String] = []
    var depth = 0, current = "", reading = false
    for character in text {
        switch character {
        case "{":
            depth += 1
            if depth == 1 || reading == false { current = ""; reading = true }
        case "}":
            depth -= 1
            if reading, !current.isEmpty { names.append(current) }
            reading = false
        case ",", " ":
            if reading, !current.isEmpty { names.append(current) }
            reading = false
        default:
            if reading { current.append(character) }
        }
    }
    return Array(Set(names.filter { $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } }))
}

extension FuzzTarget {
    /// A catalog's text filled with hostile values (ICU's MessageFormat for plurals), in its
    /// language; and ICU given a hostile pattern.
    static let messageFormat = FuzzTarget(
        name: "message-format",
        summary: "catalog texts filled by ICU MessageFormat with hostile values and patterns"
    ) { input in
        guard input.bytes.count >= 3 else { return }
        let language = catalogs[Int(input.bytes[0]) % catalogs.count]
        let (text, names) = language.texts[(Int(input.bytes[1]) << 8 | Int(input.bytes[2])) % language.texts.count]
        let rest = FuzzInput(Array(input.bytes.dropFirst(3)))
        let pieces = rest.texts(max(names.count, 1) + 1)
        var values: [String: MessageValue] = [:]
        for (index, name) in names.sorted().enumerated() {
            let piece = pieces[index]
            // A count, of any size, or a text (a name, an address).
            values[name] = piece.first == "#" ? .number(Int(piece.dropFirst()) ?? piece.utf8.count - 1) : .text(piece)
        }
        let filled = MessageFormat.fill(text, values, language: language.tag)
        fuzzCheck(filled.utf8.count <= text.utf8.count * 4 + values.values.reduce(0) { sum, value in
            if case .text(let t) = value { return sum + t.utf8.count * 8 } else { return sum + 64 }
        } + 4096, "a filled text out of proportion to its pattern and values")
        // A pattern of the attacker's own (ICU is given it whole), in the language's locale.
        _ = MessageFormat.format(pieces.last ?? "", ["n": .number(rest.bytes.count), "name": .text(pieces[0])],
                                 locale: MessageFormat.icuLocale(language.tag))
    }
}
