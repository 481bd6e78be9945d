import MicroHTTPD

/// The key a client address is limited by. An IPv6 host usually owns a whole /64 and can
/// pick any address in it, so IPv6 clients are keyed by their /64; IPv4 by the address.
package enum ClientKey {
    package static func of(_ address: String) -> String {
        // Every IPv6 address has a colon and no IPv4 address does: an IPv4 client, the usual
        // one, is its own key without parsing it (a parse per request showed in the profile).
        guard address.utf8.contains(UInt8(ascii: ":")) else { return address }
        guard let bytes = IPAddressRange.bytes(of: address), bytes.count == 16 else { return address }
        let prefix = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return prefix.joined(separator: ":") + "::/64"
    }

    /// The network a client key is in: the /24 of an IPv4 address, the /48 of an IPv6 /64
    /// (whose key spells its four groups out, so one network has one spelling).
    package static func network(ofKey key: String) -> String {
        if key.contains(":") {
            return key.split(separator: ":", omittingEmptySubsequences: false).prefix(3).joined(separator: ":") + "::/48"
        }
        let octets = key.split(separator: ".")
        return octets.count == 4 ? octets.prefix(3).joined(separator: ".") + ".0/24" : key
    }
}
