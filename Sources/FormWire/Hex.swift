/// Lowercase hexadecimal, the one way this project writes bytes as text (form tokens, session
/// id hashes, verification hashes, proof-of-work challenges) and reads them back; in the wire
/// module because the client reads challenges too.
public enum Hex {
    /// Inlinable, so callers in other modules get a copy specialized for their byte
    /// sequence: unspecialized, iterating a generic `Sequence` cost some 13,000 instructions
    /// for 32 bytes (three calls per `GET /`, for its proof-of-work challenge).
    @inlinable
    public static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var text = [UInt8]()
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digit(byte >> 4))
            text.append(digit(byte & 0x0F))
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The lowercase digit of a value below 16.
    @inlinable
    static func digit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// The bytes of lowercase hex; nil for anything looser (upper case, an odd length, other
    /// characters), so a value has one spelling only.
    public static func decode(_ text: Substring) -> [UInt8]? {
        var result = [UInt8]()
        result.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        for character in text.utf8 {
            let value: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            default: return nil
            }
            if let first = high {
                result.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return high == nil ? result : nil
    }
}
