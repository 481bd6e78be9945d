/// Who the client is, for per-client limits and logs: the connection's peer address, or,
/// when that peer is a trusted reverse proxy, the address the proxy saw (from
/// `X-Forwarded-For`). A header from anyone else is ignored: it is the client's to forge.
public struct ClientAddressResolver: Sendable {
    public let trustedProxies: [IPAddressRange]

    public init(trustedProxies: [IPAddressRange] = []) {
        self.trustedProxies = trustedProxies
    }

    public func clientAddress(of request: HTTPRequest) -> String {
        let peer = request.remoteAddress
        guard isTrusted(peer) else { return peer }
        // Proxies append the address they received from, so the list reads client, proxy1,
        // proxy2…; walking from the right, the first hop not ours is the client.
        let hops = request.headers.values(of: "X-Forwarded-For")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        var client = peer
        for hop in hops.reversed() {
            guard IPAddressRange.bytes(of: hop) != nil else { break }
            client = hop
            if !isTrusted(hop) { break }
        }
        return client
    }

    public func isTrusted(_ address: String) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }
}
