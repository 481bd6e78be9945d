import ArgumentParser
import Foundation
import Identity
import SignupServer

/// Where the server listens and where its page files are.
struct ServerOptions: ParsableArguments {
    @Option(help: help("host"))
    var host = "127.0.0.1"

    @Option(help: help("port"))
    var port: UInt16 = 8080

    @Option(help: help("worker-threads"))
    var workerThreads = 2

    @Option(help: help("instance-id"))
    var instanceId: String?

    @Option(help: help("public-directory"))
    var publicDirectory: String?

    @Option(help: help("templates-directory"))
    var templatesDirectory: String?

    func validate() throws {
        guard workerThreads >= 1 else { throw ValidationError("--worker-threads must be at least 1.") }
        if let instanceId, let problem = InstanceID.problem(with: instanceId) {
            throw ValidationError("--instance-id: \(problem)")
        }
    }

    func apply(to configuration: inout SignupApplication.Configuration) throws {
        configuration.host = host
        configuration.port = port
        configuration.workerThreads = workerThreads
        if let instanceId { configuration.instanceID = instanceId }
        let assets = try AssetLocations.find(publicDirectory: publicDirectory, templatesDirectory: templatesDirectory)
        configuration.publicDirectory = assets.publicDirectory
        configuration.templatesDirectory = assets.templatesDirectory
    }
}
