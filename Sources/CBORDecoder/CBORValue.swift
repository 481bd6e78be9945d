import CCbor

/// A decoded CBOR data item (RFC 8949), as WebAuthn's attestation objects and COSE keys
/// carry them. Decoding is libcbor's (Debian's libcbor): this module only turns its items into
/// Swift values, with limits on size and depth so hostile input costs little: `CBORHeads`
/// checks every declared length against the bytes sent before libcbor allocates for it.
public indirect enum CBORValue: Equatable, Sendable {
    case unsigned(UInt64)
    /// A negative integer, -1 - n (kept as n, so the whole CBOR range fits).
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBORValue])
    /// Pairs in their encoded order (CBOR maps may have any keys; COSE's are integers).
    case map([(CBORValue, CBORValue)])
    case tagged(UInt64, CBORValue)
    case bool(Bool)
    case null
    case undefined
    case float(Double)
    /// A simple value other than false, true, null, undefined.
    case simple(UInt8)

    public static func == (lhs: CBORValue, rhs: CBORValue) -> Bool {
        switch (lhs, rhs) {
        case let (.unsigned(a), .unsigned(b)): return a == b
        case let (.negative(a), .negative(b)): return a == b
        case let (.bytes(a), .bytes(b)): return a == b
        case let (.text(a), .text(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.map(a), .map(b)): return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case let (.tagged(tagA, a), .tagged(tagB, b)): return tagA == tagB && a == b
        case let (.bool(a), .bool(b)): return a == b
        case (.null, .null), (.undefined, .undefined): return true
        case let (.float(a), .float(b)): return a == b || (a.isNaN && b.isNaN)
        case let (.simple(a), .simple(b)): return a == b
        default: return false
        }
    }

    /// The value of an integer that fits in `Int` (COSE labels and algorithm numbers).
    public var int: Int? {
        switch self {
        case .unsigned(let n): return n <= UInt64(Int.max) ? Int(n) : nil
        case .negative(let n): return n < UInt64(Int.max) ? -1 - Int(n) : nil
        default: return nil
        }
    }

    public var byteString: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }

    public var textString: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    /// The value under `key` in a map (the first, if a map repeats a key).
    public subscript(key: CBORValue) -> CBORValue? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.0 == key }?.1
    }

    public subscript(label: Int) -> CBORValue? {
        self[label >= 0 ? .unsigned(UInt64(label)) : .negative(UInt64(-1 - label))]
    }

    public subscript(text: String) -> CBORValue? {
        self[.text(text)]
    }
}

/// Why bytes are not the CBOR expected.
public struct CBORDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    public let reason: String
    public var description: String { reason }
    init(_ reason: String) { self.reason = reason }
}

/// How much a decoding may take: attestation objects are a few KiB; anything bigger or deeper
/// is refused before or while it is read.
public struct CBORLimits: Sendable {
    public var maximumBytes: Int
    public var maximumDepth: Int
    /// Array elements and map pairs together.
    public var maximumItems: Int

    public init(maximumBytes: Int = 16 * 1024, maximumDepth: Int = 16, maximumItems: Int = 2048) {
        self.maximumBytes = maximumBytes
        self.maximumDepth = maximumDepth
        self.maximumItems = maximumItems
    }
}

extension CBORValue {
    /// Decodes one data item at the start of `bytes`; also says how many bytes it took (an
    /// authenticator's data puts its COSE key before its extensions, with no length).
    public static func decodePrefix(_ bytes: [UInt8], limits: CBORLimits = CBORLimits()) throws(CBORDecodingError)
        -> (value: CBORValue, length: Int) {
        guard !bytes.isEmpty else { throw CBORDecodingError("no data") }
        guard bytes.count <= limits.maximumBytes else {
            throw CBORDecodingError("\(bytes.count) bytes; at most \(limits.maximumBytes) are read")
        }
        // Measured first: libcbor allocates a container's declared length before reading
        // its items, so only an item whose every length fits the bytes sent may reach it.
        let measured = try bytes.withUnsafeBufferPointer { buffer throws(CBORDecodingError) in
            try CBORHeads.measure(buffer, limits: limits)
        }
        var result = cbor_load_result()
        let item = bytes.withUnsafeBufferPointer { cbor_load($0.baseAddress, measured, &result) }
        guard let item else {
            throw CBORDecodingError(describe(result.error.code, at: result.error.position))
        }
        defer { var owned: UnsafeMutablePointer<cbor_item_t>? = item; cbor_decref(&owned) }
        var budget = limits.maximumItems
        let value = try convert(item, depth: 0, limits: limits, budget: &budget)
        return (value, result.read)
    }

    /// Decodes bytes that are exactly one data item (trailing bytes are refused).
    public static func decode(_ bytes: [UInt8], limits: CBORLimits = CBORLimits()) throws(CBORDecodingError) -> CBORValue {
        let (value, length) = try decodePrefix(bytes, limits: limits)
        guard length == bytes.count else {
            throw CBORDecodingError("\(bytes.count - length) bytes follow the data item")
        }
        return value
    }

    private static func describe(_ code: cbor_error_code, at position: Int) -> String {
        switch code {
        case CBOR_ERR_NOTENOUGHDATA: return "cut short (at byte \(position))"
        case CBOR_ERR_NODATA: return "no data"
        case CBOR_ERR_MALFORMATED: return "not well-formed CBOR (at byte \(position))"
        case CBOR_ERR_MEMERROR: return "too large to hold"
        case CBOR_ERR_SYNTAXERROR: return "not valid CBOR (at byte \(position))"
        default: return "not CBOR (at byte \(position))"
        }
    }

    private static func convert(_ item: UnsafeMutablePointer<cbor_item_t>, depth: Int, limits: CBORLimits,
                                budget: inout Int) throws(CBORDecodingError) -> CBORValue {
        guard depth <= limits.maximumDepth else { throw CBORDecodingError("nested deeper than \(limits.maximumDepth)") }
        switch cbor_typeof(item) {
        case CBOR_TYPE_UINT:
            return .unsigned(cbor_get_int(item))
        case CBOR_TYPE_NEGINT:
            return .negative(cbor_get_int(item))
        case CBOR_TYPE_BYTESTRING:
            return .bytes(try chunks(item, isText: false))
        case CBOR_TYPE_STRING:
            let bytes = try chunks(item, isText: true)
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw CBORDecodingError("a text string is not UTF-8")
            }
            return .text(text)
        case CBOR_TYPE_ARRAY:
            let count = cbor_array_size(item)
            budget -= count
            guard budget >= 0 else { throw CBORDecodingError("more than \(limits.maximumItems) items") }
            guard let handle = cbor_array_handle(item) else { return .array([]) }
            var values: [CBORValue] = []
            values.reserveCapacity(count)
            for index in 0..<count {
                guard let element = handle[index] else { throw CBORDecodingError("an array element is missing") }
                values.append(try convert(element, depth: depth + 1, limits: limits, budget: &budget))
            }
            return .array(values)
        case CBOR_TYPE_MAP:
            let count = cbor_map_size(item)
            budget -= count
            guard budget >= 0 else { throw CBORDecodingError("more than \(limits.maximumItems) items") }
            guard let handle = cbor_map_handle(item) else { return .map([]) }
            var pairs: [(CBORValue, CBORValue)] = []
            pairs.reserveCapacity(count)
            for index in 0..<count {
                guard let key = handle[index].key, let value = handle[index].value else {
                    throw CBORDecodingError("a map pair is missing its key or value")
                }
                pairs.append((try convert(key, depth: depth + 1, limits: limits, budget: &budget),
                              try convert(value, depth: depth + 1, limits: limits, budget: &budget)))
            }
            return .map(pairs)
        case CBOR_TYPE_TAG:
            guard let inner = cbor_tag_item(item) else { throw CBORDecodingError("a tag has no item") }
            defer { var inner: UnsafeMutablePointer<cbor_item_t>? = inner; cbor_decref(&inner) }
            return .tagged(cbor_tag_value(item), try convert(inner, depth: depth + 1, limits: limits, budget: &budget))
        case CBOR_TYPE_FLOAT_CTRL:
            if cbor_float_ctrl_is_ctrl(item) {
                switch cbor_ctrl_value(item) {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                case 23: return .undefined
                case let value: return .simple(value)
                }
            }
            return .float(cbor_float_get_float(item))
        default:
            throw CBORDecodingError("an item of unknown type")
        }
    }

    /// A string's bytes, joined from its chunks when it was sent in pieces (indefinite length).
    private static func chunks(_ item: UnsafeMutablePointer<cbor_item_t>, isText: Bool) throws(CBORDecodingError) -> [UInt8] {
        let definite = isText ? cbor_string_is_definite(item) : cbor_bytestring_is_definite(item)
        if definite {
            let length = isText ? cbor_string_length(item) : cbor_bytestring_length(item)
            guard length > 0, let handle = isText ? cbor_string_handle(item) : cbor_bytestring_handle(item) else { return [] }
            return Array(UnsafeBufferPointer(start: handle, count: length))
        }
        let count = isText ? cbor_string_chunk_count(item) : cbor_bytestring_chunk_count(item)
        guard let handle = isText ? cbor_string_chunks_handle(item) : cbor_bytestring_chunks_handle(item) else { return [] }
        var bytes: [UInt8] = []
        for index in 0..<count {
            guard let chunk = handle[index] else { throw CBORDecodingError("a string chunk is missing") }
            bytes += try chunks(chunk, isText: isText)
        }
        return bytes
    }
}
