/// A walk over a data item's heads (RFC 8949 §3 and Appendix C's well-formedness check)
/// before libcbor sees a byte.
///
/// Why it exists: libcbor 0.8 allocates and zero-fills an array's or map's declared length as
/// soon as it reads the header, before any element arrives. The five bytes `9a 08 00 00 00`
/// ("an array of 2^27 items") cost a GiB inside `cbor_load`, and each nested header adds as
/// much. Here every declared length is held against the bytes that remain (an element takes
/// at least one byte, a map pair two), the items of all containers together against
/// `maximumItems`, and nesting against `maximumDepth`. Only bytes that pass reach libcbor,
/// so what it allocates is bounded by what was sent. Nothing is decoded here: a head's
/// argument is read, and strings are stepped over.
package struct CBORHeads {
    private let bytes: UnsafeBufferPointer<UInt8>
    private let limits: CBORLimits
    private var offset = 0
    private var itemsLeft: Int

    /// The length of the one well-formed data item at the start of `bytes`, within `limits`.
    package static func measure(_ bytes: UnsafeBufferPointer<UInt8>, limits: CBORLimits) throws(CBORDecodingError) -> Int {
        var walk = CBORHeads(bytes: bytes, limits: limits, itemsLeft: limits.maximumItems)
        try walk.item(depth: 0)
        return walk.offset
    }

    private init(bytes: UnsafeBufferPointer<UInt8>, limits: CBORLimits, itemsLeft: Int) {
        self.bytes = bytes
        self.limits = limits
        self.itemsLeft = itemsLeft
    }

    private var remaining: Int { bytes.count - offset }

    /// A head: its major type, its additional information, and the argument that follows
    /// (nil for an indefinite length, 31).
    private mutating func head() throws(CBORDecodingError) -> (major: UInt8, info: UInt8, argument: UInt64?) {
        guard remaining >= 1 else { throw CBORDecodingError("cut short (at byte \(offset))") }
        let start = offset
        let initial = bytes[offset]
        offset += 1
        let major = initial >> 5, info = initial & 0x1F
        switch info {
        case 0..<24:
            return (major, info, UInt64(info))
        case 24...27:
            let size = 1 << Int(info - 24)
            guard remaining >= size else { throw CBORDecodingError("cut short (at byte \(start))") }
            var argument: UInt64 = 0
            for index in 0..<size { argument = argument << 8 | UInt64(bytes[offset + index]) }
            offset += size
            return (major, info, argument)
        case 31:
            return (major, info, nil)
        default:
            throw CBORDecodingError("not well-formed CBOR (at byte \(start): reserved additional information \(info))")
        }
    }

    /// Counts `count` more container entries against the budget.
    private mutating func spend(_ count: UInt64) throws(CBORDecodingError) {
        guard count <= UInt64(itemsLeft) else { throw CBORDecodingError("more than \(limits.maximumItems) items") }
        itemsLeft -= Int(count)
    }

    private mutating func item(depth: Int) throws(CBORDecodingError) {
        guard depth <= limits.maximumDepth else { throw CBORDecodingError("nested deeper than \(limits.maximumDepth)") }
        let start = offset
        let (major, info, argument) = try head()
        switch major {
        case 0, 1:
            guard argument != nil else { throw malformed(at: start, "an integer with an indefinite length") }
        case 2, 3:
            if let length = argument {
                try skipString(length, at: start)
            } else {
                // Chunks of the same major type, each of definite length, until the break.
                while true {
                    guard remaining >= 1 else { throw CBORDecodingError("cut short (at byte \(offset))") }
                    if bytes[offset] == 0xFF { offset += 1; break }
                    let chunkStart = offset
                    let chunk = try head()
                    guard chunk.major == major, let length = chunk.argument else {
                        throw malformed(at: chunkStart, "a string chunk of another type or of indefinite length")
                    }
                    try skipString(length, at: chunkStart)
                }
            }
        case 4:
            if let count = argument {
                guard count <= UInt64(remaining) else { throw declared(count, "items", at: start) }
                try spend(count)
                for _ in 0..<count { try item(depth: depth + 1) }
            } else {
                while try !atBreak() {
                    try spend(1)
                    try item(depth: depth + 1)
                }
            }
        case 5:
            if let count = argument {
                guard count <= UInt64(remaining) / 2 else { throw declared(count, "pairs", at: start) }
                try spend(count)
                for _ in 0..<(count * 2) { try item(depth: depth + 1) }
            } else {
                while try !atBreak() {
                    try spend(1)
                    try item(depth: depth + 1)
                    guard remaining >= 1, bytes[offset] != 0xFF else { throw malformed(at: offset, "a map key without its value") }
                    try item(depth: depth + 1)
                }
            }
        case 6:
            guard argument != nil else { throw malformed(at: start, "a tag with an indefinite length") }
            try item(depth: depth + 1)
        default:
            // Simple values and floats: the head is the whole item. A break is only allowed
            // where an indefinite length is open, and that is handled above.
            if info == 31 { throw malformed(at: start, "a break outside an indefinite length") }
            if info == 24, let value = argument, value < 32 { throw malformed(at: start, "a two-byte simple value below 32") }
        }
    }

    /// Consumes the break that ends an indefinite length, if it is next.
    private mutating func atBreak() throws(CBORDecodingError) -> Bool {
        guard remaining >= 1 else { throw CBORDecodingError("cut short (at byte \(offset))") }
        guard bytes[offset] == 0xFF else { return false }
        offset += 1
        return true
    }

    private mutating func skipString(_ length: UInt64, at start: Int) throws(CBORDecodingError) {
        guard length <= UInt64(remaining) else { throw declared(length, "bytes", at: start) }
        offset += Int(length)
    }

    private func declared(_ count: UInt64, _ what: String, at start: Int) -> CBORDecodingError {
        CBORDecodingError("cut short: byte \(start) declares \(count) \(what) and \(remaining) bytes are left")
    }

    private func malformed(at position: Int, _ what: String) -> CBORDecodingError {
        CBORDecodingError("not well-formed CBOR (at byte \(position): \(what))")
    }
}
