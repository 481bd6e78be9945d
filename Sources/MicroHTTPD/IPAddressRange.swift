#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// An IPv4 or IPv6 network in CIDR notation ("10.0.0.0/8", "::1/128", or one address).
public struct IPAddressRange: Sendable, Equatable, CustomStringConvertible {
    /// 4 or 16 bytes.
    public let network: [UInt8]
    public let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddressRange.bytes(of: String(parts[0])) else { return nil }
        let maximum = address.count * 8
        let length: Int
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...maximum).contains(parsed) else { return nil }
            length = parsed
        } else {
            length = maximum
        }
        network = IPAddressRange.masked(address, to: length)
        prefixLength = length
    }

    public func contains(_ address: String) -> Bool {
        guard let bytes = IPAddressRange.bytes(of: address), bytes.count == network.count else { return false }
        return IPAddressRange.masked(bytes, to: prefixLength) == network
    }

    public var description: String {
        let family = network.count == 4 ? AF_INET : AF_INET6
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = network.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/\(prefixLength)"
    }

    /// The address's bytes (4 for IPv4, 16 for IPv6), or nil if it is not an IP address.
    public static func bytes(of address: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, address, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    private static func masked(_ bytes: [UInt8], to length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = max(0, min(8, length - index * 8))
            return bits == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
        }
    }
}
