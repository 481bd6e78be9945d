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
    /// Calls `body` with the string's UTF-8 bytes in one buffer: the bytes themselves for a
    /// native string, which every header and form value is, or a copy otherwise. Loops over
    /// a buffer cost a few instructions a byte; over `utf8`'s indices, tens.
    func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return copy.withUTF8(body)
    }

    /// Header names are ASCII tokens, so they are compared byte by byte with A–Z folded:
    /// every request looks up several headers, and `lowercased()` allocated two strings
    /// per comparison.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return withUTF8Bytes { mine in
            other.withUTF8Bytes { theirs in
                for index in 0..<mine.count where Self.asciiLowercase(mine[index]) != Self.asciiLowercase(theirs[index]) {
                    return false
                }
                return true
            }
        }
    }

    /// The text without leading and trailing spaces and tabs, A–Z lowercased: the
    /// normal form of a media type or a transfer coding.
    var asciiTrimmedLowercased: String { withUTF8Bytes(Self.asciiTrimmedLowercased) }

    /// The text before the first `separator` byte (all of it without one), trimmed and
    /// lowercased as `asciiTrimmedLowercased`: a media type without its parameters.
    func asciiTrimmedLowercased(upTo separator: UInt8) -> String {
        withUTF8Bytes { bytes in Self.asciiTrimmedLowercased(Self.prefix(of: bytes, upTo: separator)) }
    }

    /// Whether `asciiTrimmedLowercased(upTo: separator)` is `expected` (lower-case), compared
    /// in place: no string is made (a media type is longer than a string keeps inline).
    func asciiTrimmedLowercased(upTo separator: UInt8, equals expected: String) -> Bool {
        withUTF8Bytes { bytes in
            let trimmed = Self.asciiTrimmed(Self.prefix(of: bytes, upTo: separator))
            // Indexed bytes, not `elementsEqual` over a lazy map: that generic pair cost
            // about 2,000 instructions a request.
            return expected.withUTF8Bytes { wanted in
                guard wanted.count == trimmed.count else { return false }
                for index in 0..<wanted.count where Self.asciiLowercase(trimmed[index]) != wanted[index] { return false }
                return true
            }
        }
    }

    private static func prefix(of bytes: UnsafeBufferPointer<UInt8>, upTo separator: UInt8) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[..<(bytes.firstIndex(of: separator) ?? bytes.count)])
    }

    /// `bytes` without leading and trailing spaces and tabs.
    private static func asciiTrimmed(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }),
              let last = bytes.lastIndex(where: { !isBlank($0) }) else { return UnsafeBufferPointer(rebasing: bytes[0..<0]) }
        return UnsafeBufferPointer(rebasing: bytes[first...last])
    }

    static func asciiTrimmedLowercased(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let trimmed = asciiTrimmed(bytes)
        guard !trimmed.isEmpty else { return "" }
        // A text already in normal form, the usual case, is copied as it is.
        guard trimmed.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
            return String(decoding: trimmed, as: UTF8.self)
        }
        return String(unsafeUninitializedCapacity: trimmed.count) { buffer in
            for (index, byte) in trimmed.enumerated() { buffer[index] = asciiLowercase(byte) }
            return trimmed.count
        }
    }

    static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }
}
