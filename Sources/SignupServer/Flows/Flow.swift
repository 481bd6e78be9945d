import MicroHTTPD
import WebKernel

/// A flow (registration, login, recovery, …): the route rows it answers and the pages it
/// shows. The router's table and the templates checked at start are every flow's.
protocol Flow: SendableMetatype {
    /// Its rows, each with its handler: made once at start from the services.
    static func routes(_ services: Services) -> [Route]
    static var pages: [any PageView.Type] { get }
}
