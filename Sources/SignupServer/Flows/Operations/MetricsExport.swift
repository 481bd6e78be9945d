import Identity
import MicroHTTPD
import WebKernel

/// Where `/metrics` gets its text and who may read it: loopback always, plus the ranges an
/// operator allows (`--metrics-allow`). The address is the client's as resolved through
/// trusted proxies, so a proxy in front does not make the metrics public.
public struct MetricsExport: Sendable {
    public let allowed: [IPAddressRange]
    /// The Prometheus text exposition of every metric, rendered on each scrape.
    public let render: @Sendable () -> [UInt8]

    public init(allowed: [IPAddressRange], render: @escaping @Sendable () -> [UInt8]) {
        self.allowed = allowed
        self.render = render
    }

    private static let loopback = [IPAddressRange("127.0.0.0/8")!, IPAddressRange("::1")!]

    func allows(_ address: String) -> Bool {
        (Self.loopback + allowed).contains { $0.contains(address) }
    }
}
