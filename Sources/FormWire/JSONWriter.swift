/// Writes the protocol's small JSON objects directly into a string: the same bytes as
/// `WireJSON.encode` (sorted keys, slashes unescaped, JSONEncoder's escapes) without building
/// a `JSONEncoder` and its boxed value tree per event, which cost about 8 % of the server's
/// CPU per edit. Callers write keys in sorted order; `JSONWriterTests` compares every shape
/// with `JSONEncoder`'s output.
public struct JSONWriter {
    /// Written as UTF-8 bytes: appending to a String checks every seam for characters that
    /// join across it, several times the cost of the bytes themselves.
    public private(set) var bytes: [UInt8] = []
    /// Whether the value being written at each nesting depth needs a comma first, one bit a
    /// depth (the protocol's objects nest two or three deep), so no array is made per writer.
    private var needsComma: UInt64 = 0
    private var depth = 0

    public init() {
        bytes.reserveCapacity(128)
    }

    /// The JSON written so far.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        precondition(depth < 63, "JSONWriter nests at most 63 objects")
        depth += 1
        needsComma &= ~(1 << depth)
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        depth -= 1
    }

    public mutating func key(_ name: String) {
        separate()
        Self.appendString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        // The value follows the key without a comma.
        needsComma &= ~(1 << depth)
    }

    public mutating func string(_ value: String) {
        separate()
        Self.appendString(value, to: &bytes)
    }

    public mutating func int(_ value: Int) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    public mutating func stringArray(_ values: [String]) {
        separate()
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            Self.appendString(value, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    private mutating func separate() {
        if needsComma & (1 << depth) != 0 { bytes.append(UInt8(ascii: ",")) }
        needsComma |= 1 << depth
    }

    /// JSONEncoder's escaping: `"` and `\` escaped, the short forms for \b \f \n \r \t, other
    /// control characters as \u00XX (lower-case hex), everything else (including "/" and
    /// non-ASCII) as it is.
    static func appendString(_ value: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: "\\\\".utf8)
            case 0x08: bytes.append(contentsOf: "\\b".utf8)
            case 0x0C: bytes.append(contentsOf: "\\f".utf8)
            case 0x0A: bytes.append(contentsOf: "\\n".utf8)
            case 0x0D: bytes.append(contentsOf: "\\r".utf8)
            case 0x09: bytes.append(contentsOf: "\\t".utf8)
            case 0x00..<0x20:
                bytes.append(contentsOf: "\\u00".utf8)
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0x0F)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
