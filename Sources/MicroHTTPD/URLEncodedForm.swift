import Foundation

/// A decoded `application/x-www-form-urlencoded` body (WHATWG URL standard §5.1).
public struct URLEncodedForm: Sendable {
    public enum DecodingError: Error, Equatable, CustomStringConvertible {
        case invalidPercentEncoding
        case invalidUTF8

        public var description: String {
            switch self {
            case .invalidPercentEncoding: return "The form body has a malformed percent-escape."
            case .invalidUTF8: return "The form body is not valid UTF-8."
            }
        }
    }

    public let fields: [(name: String, value: String)]

    public init(fields: [(name: String, value: String)]) {
        self.fields = fields
    }

    public init(decoding body: [UInt8]) throws(DecodingError) {
        // One pass over the bytes in one buffer, without the slices and arrays `split` would
        // make: every field edit is decoded here.
        fields = try body.withUnsafeBufferPointer { (bytes) throws(DecodingError) in
            var fields: [(name: String, value: String)] = []
            fields.reserveCapacity(bytes.reduce(1) { $1 == UInt8(ascii: "&") ? $0 + 1 : $0 })
            var pairStart = 0
            while pairStart < bytes.count {
                let pairEnd = bytes[pairStart...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
                if pairEnd > pairStart {
                    let pair = bytes[pairStart..<pairEnd]
                    if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
                        fields.append((try Self.decodeComponent(UnsafeBufferPointer(rebasing: pair[..<equals])),
                                       try Self.decodeComponent(UnsafeBufferPointer(rebasing: pair[(equals + 1)...]))))
                    } else {
                        fields.append((try Self.decodeComponent(UnsafeBufferPointer(rebasing: pair)), ""))
                    }
                }
                pairStart = pairEnd + 1
            }
            return fields
        }
    }

    /// The first value with that name.
    public subscript(name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    static func decodeComponent(_ bytes: UnsafeBufferPointer<UInt8>) throws(DecodingError) -> String {
        // Most components (a token, a field name, a typed value) are plain ASCII with nothing
        // escaped: they become a string as they are.
        if !bytes.contains(where: { $0 >= 0x80 || $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "+"):
                decoded.append(UInt8(ascii: " "))
                index += 1
            case UInt8(ascii: "%"):
                guard index + 2 < bytes.count,
                      let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
                else { throw .invalidPercentEncoding }
                decoded.append(high << 4 | low)
                index += 3
            default:
                decoded.append(byte)
                index += 1
            }
        }
        guard let string = String(validating: decoded, as: UTF8.self) else { throw .invalidUTF8 }
        return string
    }

    /// The value of one hex digit; shared with `PercentDecoding`.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
