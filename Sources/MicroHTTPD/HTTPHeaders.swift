import Foundation

/// An ordered list of header fields with case-insensitive lookup (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Sequence {
    public private(set) var fields: [(name: String, value: String)]

    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    /// The first value of the named field, if present.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of the named field, in order (a field may be sent more than once).
    public func values(of name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every field of that name with one field.
    public mutating func set(_ name: String, _ value: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
        fields.append((name, value))
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}

extension String {
    /// Header names are ASCII tokens, so they are compared byte by byte with A–Z folded:
    /// every request looks up several headers, and `lowercased()` allocated two strings
    /// per comparison.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        utf8.count == other.utf8.count
            && utf8.elementsEqual(other.utf8) { Self.asciiLowercase($0) == Self.asciiLowercase($1) }
    }

    /// The text without leading and trailing spaces and tabs, A–Z lowercased: the
    /// normal form of a media type or a transfer coding.
    var asciiTrimmedLowercased: String { Substring(self).asciiTrimmedLowercased }

    static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }
}

extension Substring {
    /// See `String.asciiTrimmedLowercased`. (Foundation's `trimmingCharacters(in:)` bridges
    /// through NSString; a text already in normal form, the usual case, is copied as is.)
    var asciiTrimmedLowercased: String {
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let bytes = utf8
        guard let first = bytes.firstIndex(where: { !isBlank($0) }),
              let last = bytes.lastIndex(where: { !isBlank($0) }) else { return "" }
        let trimmed = bytes[first...last]
        guard trimmed.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
            return String(Substring(trimmed))
        }
        return String(decoding: trimmed.map(String.asciiLowercase), as: UTF8.self)
    }
}
