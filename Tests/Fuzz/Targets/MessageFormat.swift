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
            // A count, of any size; a moment; a name someone supplied (isolated for direction);
            // or words.
            switch piece.first {
            case "#": values[name] = .number(Int(piece.dropFirst()) ?? piece.utf8.count - 1)
            case "%": values[name] = .date(Date(timeIntervalSince1970: Double(Int32(truncatingIfNeeded: piece.utf8.count * 7_919_993)) * 3))
            case "@": values[name] = .name(String(piece.dropFirst()))
            default: values[name] = .text(piece)
            }
        }
        let filled = MessageFormat.fill(text, values, language: language.tag)
        fuzzCheck(filled.utf8.count <= text.utf8.count * 4 + values.values.reduce(0) { sum, value in
            switch value {
            case .text(let t), .name(let t): return sum + t.utf8.count * 8
            case .number, .date: return sum + 64
            }
        } + 4096, "a filled text out of proportion to its pattern and values")
        // A name cannot end its own isolation, or open one that never ends: every FSI the
        // names brought has its PDI, whatever the names hold (issue 58). (`.text` is the
        // sentence's own words, which the server never takes from a stranger: it is left out.)
        let wordsHoldIsolates = values.values.contains { value in
            guard case .text(let words) = value else { return false }
            return words.unicodeScalars.contains { $0 == "\u{2068}" || $0 == "\u{2069}" }
        }
        let isolates = filled.unicodeScalars.reduce(into: (open: 0, close: 0)) { counts, scalar in
            if scalar == "\u{2068}" { counts.open += 1 } else if scalar == "\u{2069}" { counts.close += 1 }
        }
        fuzzCheck(wordsHoldIsolates || isolates.open == isolates.close,
                  "isolation unbalanced (\(isolates.open) FSI, \(isolates.close) PDI): \(filled.debugDescription)")
        // The same sentence as a page's HTML: nothing of a value or the pattern is markup but
        // the <bdi> and <time> the sentence puts there.
        let html = HTMLSentence.fill(text, values, language: language.tag)
        let markupLeft = html.replacingOccurrences(of: "<bdi>", with: "").replacingOccurrences(of: "</bdi>", with: "")
            .replacingOccurrences(of: "</time>", with: "")
            .replacing(#/<time datetime="[0-9T:Z-]+">/#, with: "")
        fuzzCheck(!markupLeft.contains("<") && !markupLeft.contains(">") && !markupLeft.contains("\""),
                  "markup in an HTML sentence that the sentence did not put there: \(html.debugDescription)")
        // A pattern of the attacker's own (ICU is given it whole), in the language's locale.
        _ = MessageFormat.format(pieces.last ?? "", ["n": .number(rest.bytes.count), "name": .text(pieces[0])],
                                 locale: MessageFormat.icuLocale(language.tag))
    }
}
