import ArgumentParser
import Dispatch
import Foundation
import Logging
import SignupDomain
import SignupServer

@main
struct SignupServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signup-server",
        abstract: "Serves the LiveSignup sign-up page.",
        subcommands: [Serve.self, Accounts.self],
        defaultSubcommand: Serve.self)
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Start the web server (the default).")

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one and prints it.")
    var port: UInt16 = 8080

    @Option(help: "SQLite database file; created and migrated on start.")
    var database = "data/livesignup.sqlite"

    @Option(help: "Folder of static files served under /static/.")
    var publicDirectory = "Public"

    @Option(help: "Folder of Mustache templates.")
    var templatesDirectory = "Templates"

    @Option(help: "Password and username policy: \(Policy.all.map(\.name).joined(separator: " or ")).")
    var policy = Policy.classic.name

    @Option(help: "Milliseconds a username must stay unchanged before it is looked up.")
    var availabilityDebounceMs = 300

    @Option(help: "epoll worker threads.")
    var workerThreads = 2

    @Flag(help: "Mark a few demo usernames (alice, bob, carol, admin, …) as taken.")
    var seedDemo = false

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @OptionGroup(title: "Abuse limits (rates are COUNT/UNIT[,burst=N] with UNIT s, min or h, or 'off')")
    var limits: LimitOptions

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("Unknown log level '\(logLevel)'.")
        }
        guard Policy.named(policy) != nil else {
            throw ValidationError("Unknown policy '\(policy)'. Choose one of: \(Policy.all.map(\.name).joined(separator: ", ")).")
        }
        guard availabilityDebounceMs >= 0 else { throw ValidationError("--availability-debounce-ms must be ≥ 0.") }
        guard workerThreads >= 1 else { throw ValidationError("--worker-threads must be ≥ 1.") }
    }

    func run() throws {
        var logger = Logger(label: "livesignup")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info

        let store = try SQLiteAccountStore(path: database)
        if seedDemo {
            try store.reserveUsernames(["alice", "bob", "carol", "dave", "admin", "support"])
        }

        var configuration = SignupApplication.Configuration()
        configuration.host = host
        configuration.port = port
        configuration.publicDirectory = URL(fileURLWithPath: publicDirectory)
        configuration.templatesDirectory = URL(fileURLWithPath: templatesDirectory)
        configuration.availabilityDebounce = .milliseconds(availabilityDebounceMs)
        configuration.policy = SignupPolicy(Policy.named(policy) ?? .classic)
        configuration.workerThreads = workerThreads
        try limits.apply(to: &configuration)
        if let hex = ProcessInfo.processInfo.environment["LIVESIGNUP_FORM_TOKEN_KEY"], !hex.isEmpty {
            configuration.formTokenKey = try LimitOptions.key(fromHex: hex)
        }
        let app = try SignupApplication(configuration: configuration, store: store, logger: logger)
        try app.start()
        // Scripts and tests read this line to learn the port (e.g. with --port 0).
        FileHandle.standardOutput.write(Data("LiveSignup listening on http://\(host):\(app.port)\n".utf8))

        ShutdownSignals.install {
            app.stop()
            Foundation.exit(0)
        }
        dispatchMain()
    }
}

/// Stops cleanly on SIGINT (Ctrl-C) and SIGTERM.
enum ShutdownSignals {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

    static func install(_ handler: @escaping @Sendable () -> Void) {
        for signalNumber in [SIGINT, SIGTERM] {
            // On macOS the default action must be ignored for the source to see the signal;
            // on Linux libdispatch installs its own handler, and SIG_IGN would discard it.
            #if os(macOS)
            signal(signalNumber, SIG_IGN)
            #endif
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            sources.append(source)
        }
    }
}
