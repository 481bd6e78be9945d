import CBORDecoder

extension FuzzTarget {
    /// Every attestation object and COSE key is CBOR: the heads pass bounds it before libcbor
    /// allocates, then libcbor decodes.
    static let cbor = FuzzTarget(
        name: "cbor",
        summary: "CBOR (WebAuthn attestation objects, COSE keys): CBORHeads, CBORValue.decode",
        seeds: { RecordedCeremonies.parts { ["attestation": RecordedCeremonies.response($0, "registration")["attestationObject"] ?? ""] } }
    ) { input in
        let bytes = input.bytes
        let measured = bytes.withUnsafeBufferPointer { try? CBORHeads.measure($0, limits: CBORLimits()) }
        guard let (value, length) = try? CBORValue.decodePrefix(bytes) else {
            return
        }
        // The heads pass and libcbor agree on where the item ends: the authenticator data is
        // cut at that length, so a disagreement would hand the next field the wrong bytes.
        fuzzCheck(measured == length, "the heads pass measured \(String(describing: measured)), libcbor read \(length)")
        fuzzCheck(length <= bytes.count && length <= CBORLimits().maximumBytes, "read past the input or the limit")
        fuzzCheck(depth(value) <= CBORLimits().maximumDepth + 1, "decoded deeper than the limit")
        // Whole-input decoding accepts exactly the inputs with nothing after the item.
        let whole = try? CBORValue.decode(bytes)
        fuzzCheck((whole != nil) == (length == bytes.count), "decode and decodePrefix disagree on trailing bytes")
        if let whole { fuzzCheck(whole == value, "decode and decodePrefix read different values") }
    }

    private static func depth(_ value: CBORValue) -> Int {
        switch value {
        case .array(let items): return 1 + (items.map(depth).max() ?? 0)
        case .map(let pairs): return 1 + (pairs.map { max(depth($0.0), depth($0.1)) }.max() ?? 0)
        case .tagged(_, let inner): return 1 + depth(inner)
        default: return 0
        }
    }
}
