/// Finds `<input>` tags in the served page and reads their attributes.
///
/// A full HTML parser would be a dependency for one hidden field; this scanner handles what
/// the attribute syntax allows (any order, any case, double/single/no quotes, entities), which
/// is what a template change could plausibly produce.
enum HTMLInputScanner {
    /// The `value` of the first `<input type="hidden" name="…">` with that name.
    static func hiddenInputValue(named name: String, in html: String) -> String? {
        inputs(in: html).first { attributes in
            attributes["type"]?.lowercased() == "hidden" && attributes["name"] == name
        }?["value"]
    }

    /// Attributes of every `<input>` tag in document order. Names are lowercased (HTML
    /// attribute names are case-insensitive); values are entity-decoded.
    static func inputs(in html: String) -> [[String: String]] {
        let bytes = Array(html.utf8)
        var results: [[String: String]] = []
        var index = 0
        while let start = nextInputTag(in: bytes, from: index) {
            let (attributes, end) = parseAttributes(in: bytes, from: start)
            results.append(attributes)
            index = end
        }
        return results
    }

    /// Index just after "<input" of the next input tag, or nil.
    private static func nextInputTag(in bytes: [UInt8], from start: Int) -> Int? {
        let tag = Array("<input".utf8)
        var index = start
        while index + tag.count <= bytes.count {
            if zip(bytes[index..<index + tag.count], tag).allSatisfy({ lowercase($0) == $1 }) {
                let after = index + tag.count
                // "<inputs>" or "<input-x>" are other tags.
                if after == bytes.count || isSpace(bytes[after]) || bytes[after] == UInt8(ascii: ">")
                    || bytes[after] == UInt8(ascii: "/") {
                    return after
                }
            }
            index += 1
        }
        return nil
    }

    private static func parseAttributes(in bytes: [UInt8], from start: Int) -> ([String: String], Int) {
        var attributes: [String: String] = [:]
        var index = start
        func skipSpaces() {
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
        }
        while index < bytes.count {
            skipSpaces()
            guard index < bytes.count else { break }
            if bytes[index] == UInt8(ascii: ">") { return (attributes, index + 1) }
            if bytes[index] == UInt8(ascii: "/") { index += 1; continue }
            let nameStart = index
            while index < bytes.count, !isSpace(bytes[index]),
                  ![UInt8(ascii: "="), UInt8(ascii: ">"), UInt8(ascii: "/")].contains(bytes[index]) {
                index += 1
            }
            let name = String(decoding: bytes[nameStart..<index].map(lowercase), as: UTF8.self)
            skipSpaces()
            var value = ""
            if index < bytes.count, bytes[index] == UInt8(ascii: "=") {
                index += 1
                skipSpaces()
                if index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") {
                    let quote = bytes[index]
                    index += 1
                    let valueStart = index
                    while index < bytes.count, bytes[index] != quote { index += 1 }
                    value = String(decoding: bytes[valueStart..<index], as: UTF8.self)
                    index = min(index + 1, bytes.count)
                } else {
                    let valueStart = index
                    while index < bytes.count, !isSpace(bytes[index]), bytes[index] != UInt8(ascii: ">") {
                        index += 1
                    }
                    value = String(decoding: bytes[valueStart..<index], as: UTF8.self)
                }
            }
            // The first occurrence of a duplicated attribute wins, as in HTML.
            if !name.isEmpty, attributes[name] == nil {
                attributes[name] = decodeEntities(value)
            }
        }
        return (attributes, index)
    }

    /// Decodes the character references a template engine emits when escaping.
    static func decodeEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        let named: [Substring: String] = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'"]
        var result = ""
        var rest = text[...]
        while let ampersand = rest.firstIndex(of: "&") {
            result += rest[..<ampersand]
            let afterAmpersand = rest.index(after: ampersand)
            guard let semicolon = rest[afterAmpersand...].prefix(10).firstIndex(of: ";") else {
                result += "&"
                rest = rest[afterAmpersand...]
                continue
            }
            let entity = rest[afterAmpersand..<semicolon]
            var replacement: String?
            if let text = named[entity] {
                replacement = text
            } else if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                replacement = UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init).map { String($0) }
            } else if entity.hasPrefix("#") {
                replacement = UInt32(entity.dropFirst(), radix: 10).flatMap(Unicode.Scalar.init).map { String($0) }
            }
            if let replacement {
                result += replacement
                rest = rest[rest.index(after: semicolon)...]
            } else {
                result += "&"
                rest = rest[afterAmpersand...]
            }
        }
        return result + rest
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D
    }

    private static func lowercase(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}
