import Foundation
import Identity
import MicroHTTPD
import WebKernel

/// A flow (registration, login, recovery, …): the route rows it answers and the pages it
/// shows. The router's table and the templates checked at start are every flow's.
protocol Flow: SendableMetatype {
    /// Its rows, each with its handler: made once at start from the services.
    static func routes(_ services: Services) -> [Route]
    static var pages: [any PageView.Type] { get }
    /// What it keeps only for a while (a pending sign-up, a recovery, an address change),
    /// removed by the app's periodic sweep on the app's clock. None unless it says.
    static func sweeps(_ services: Services) -> [Sweep]
}

extension Flow {
    static func sweeps(_ services: Services) -> [Sweep] { [] }
}

/// One kind of row a flow keeps for a while, and how to remove those that have expired by a
/// given time (how many went). Each sweep runs on its own: one that fails is logged, the
/// others still run.
struct Sweep: Sendable {
    /// What it removes, for the log: "expired account recoveries".
    let what: String
    let run: @Sendable (Date) throws -> Int
}
