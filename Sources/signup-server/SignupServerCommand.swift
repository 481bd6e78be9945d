import ArgumentParser
import Dispatch
import Foundation
import Identity
import Logging
import SignupDomain
import SignupServer
import WebKernel

@main
struct SignupServerCommand: ParsableCommand {
    static let version = "0.10.0"

    static let configuration = CommandConfiguration(
        commandName: "signup-server",
        abstract: "Serves the LiveSignup sign-up page.",
        discussion: "serve's settings come from a configuration file (--config FILE or LIVESIGNUP_CONFIG; docs/CONFIGURATION.md), environment variables LIVESIGNUP_<NAME> (shown with each option) and flags: a flag wins over the environment, the environment over the file, the file over the default. `signup-server config print` shows where each came from.",
        version: version,
        subcommands: [Serve.self, Accounts.self, Sessions.self, Mail.self, PolicyCommand.self, ConfigCommand.self, Keys.self, Funnel.self],
        defaultSubcommand: Serve.self)

    /// Resolves the settings of the command being run (the file, the environment, the
    /// flags), then parses: serve takes every setting, the operator's commands the ones
    /// they have an option for.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        // Help and the version need no settings.
        let asksForHelp = arguments.contains { ["--help", "-h", "--version", "--experimental-dump-help"].contains($0) }
        guard !asksForHelp, arguments.first != "help" else { return main(arguments) }
        // The command named, down the subcommands; serve when none is.
        var command: ParsableCommand.Type = Serve.self
        var path: [String] = []
        var candidates = configuration.subcommands
        for argument in arguments {
            guard let next = candidates.first(where: { $0._commandName == argument }) else { break }
            (command, candidates) = (next, next.configuration.subcommands)
            path.append(argument)
        }
        // config's own commands read a file themselves, or print.
        guard path.first != ConfigCommand._commandName else { return main(arguments) }
        let declarations = command == Serve.self ? ServeSettings.all : ConfigurationSources.declarations(of: command)
        do {
            let rest = try ConfigurationSources.prepare(Array(arguments.dropFirst(path.count)), for: declarations,
                                                        environment: ProcessInfo.processInfo.environment)
            main((path.isEmpty ? ["serve"] : path) + rest)
        } catch {
            ConfigurationSources.report(error, consequence: "not started: the configuration has the problems above")
            Foundation.exit(ExitCode.failure.rawValue)
        }
    }
}

/// The help of an operator's command's option that is one of serve's settings (`--database`):
/// its own words here, its variable from the setting's declaration.
func help(_ flag: String, _ text: String) -> ArgumentHelp {
    guard let declaration = ServeSettings.byFlag[flag] else {
        preconditionFailure("--\(flag) names no setting in ServeSettings")
    }
    return ArgumentHelp("\(text) [env: \(declaration.environmentVariable)]")
}

/// A `serve` option's help, from its setting's declaration (`ServeSettings`): its one line,
/// its variable and its key in the configuration file.
func help(_ flag: String) -> ArgumentHelp {
    guard let declaration = ServeSettings.byFlag[flag] else {
        preconditionFailure("--\(flag) is an option of serve that no setting in ServeSettings declares")
    }
    return ArgumentHelp("\(declaration.help) [env: \(declaration.environmentVariable)] [file: \(declaration.path)]")
}

/// A limit's help, from its declaration.
func help(_ limit: LimitSetting) -> ArgumentHelp {
    help(limit.flag)
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Start the web server (the default).")

    @OptionGroup(title: "Listening")
    var server: ServerOptions

    @OptionGroup(title: "Accounts and policy")
    var accounts: AccountOptions

    @OptionGroup(title: "Operations")
    var operations: OperationOptions

    @OptionGroup(title: "Proving email addresses")
    var mail: MailOptions

    @OptionGroup(title: "Proof of work (bots pay, people don't)")
    var proof: ProofOptions

    @OptionGroup(title: "Abuse limits (rates are COUNT/UNIT[,burst=N] with UNIT s, min, h or d, or 'off')")
    var limits: LimitOptions

    func run() throws {
        let logging = try operations.bootstrapLogging()
        let logger = logging.logger
        let metrics = try operations.bootstrapMetrics()

        let store: any AccountStore
        do {
            store = try AccountOptions.openStore(accounts.database, connections: accounts.databaseConnections,
                                                 wait: accounts.databaseWait, logger: logger)
        } catch {
            logger.critical("Could not open the account store", metadata: ["error": "\(error)"])
            throw ExitCode.failure
        }
        if accounts.seedDemo {
            try store.reserveUsernames(["alice", "bob", "carol", "dave", "admin", "support"])
        }

        var configuration = SignupApplication.Configuration.defaults
        try server.apply(to: &configuration)
        try accounts.apply(to: &configuration)
        try limits.apply(to: &configuration)
        configuration.secureCookies = operations.secureCookies
        configuration.cookieDomain = operations.cookieDomain
        configuration.webhooks = try operations.webhookSettings()
        configuration.proofOfWork = proof.settings
        configuration.proofOfWorkKey = try ProofOptions.keyFromEnvironment()
        configuration.emailVerification = mail.settings(serviceName: configuration.policy.settings.serviceName)
        if let warning = mail.plaintextWarning { logger.warning("\(warning)") }
        configuration.signInLifetime = TimeInterval(operations.signinLifetimeHours * 3600)
        configuration.signInIdleTimeout = TimeInterval(operations.signinIdleHours * 3600)
        configuration.recentSignInLifetime = TimeInterval(operations.recentSigninMinutes * 60)
        configuration.deletedUsernameReservation = TimeInterval(operations.deletedUsernameDays * 86_400)
        configuration.secondFactorRule = accounts.secondFactor.flatMap(SecondFactorRule.init(rawValue:))
        configuration.pseudoLocale = accounts.pseudoLocale
        configuration.metricsExport = metrics
        configuration.accessLines = logging.accessLines
        if let path = ConfigurationSources.resolution?.filePath {
            logger.info("Configuration read", metadata: ["file": "\(path)"])
        }
        if let text = try ConfigurationSources.secret(.secondFactorKey), !text.isEmpty {
            guard let key = SecondFactorSeal.key(from: text) else {
                throw ValidationError("LIVESIGNUP_SECOND_FACTOR_KEY must be 32 bytes, as 64 hex digits or base64.")
            }
            configuration.secondFactorKey = key
        }
        if let text = try ConfigurationSources.secret(.providerCookieKey), !text.isEmpty {
            guard let key = SecondFactorSeal.key(from: text) else {
                throw ValidationError("LIVESIGNUP_PROVIDER_COOKIE_KEY must be 32 bytes, as 64 hex digits or base64.")
            }
            configuration.providerCookieKey = key
        }
        // Each OpenID provider's client secret, from the variable its declaration names
        // (never the policy file); a missing one stops the start with its name.
        for provider in configuration.policy.settings.providers {
            if let secret = try ConfigurationSources.secret(provider.clientSecretVariable)
                ?? ConfigurationSources.providerSecret(id: provider.id), !secret.isEmpty {
                configuration.providerClientSecrets[provider.id] = secret
            }
        }
        // Each confidential application's secret (issue 56), the same way.
        for client in configuration.policy.settings.clients {
            if let variable = client.secretVariable, let secret = try ConfigurationSources.secret(variable), !secret.isEmpty {
                configuration.clientSecrets[client.id] = secret
            }
        }
        if let hex = try ConfigurationSources.secret(.formTokenKey), !hex.isEmpty {
            configuration.formTokenKey = try LimitOptions.key(fromHex: hex)
        }
        // Kept out of the database when given: a copy of it then opens no mail in the outbox
        // and cannot test a guessed code offline (docs/SECURITY.md).
        if let hex = try ConfigurationSources.secret(.mailSealingKey), !hex.isEmpty {
            configuration.mailSealingKey = try LimitOptions.key(fromHex: hex, variable: "LIVESIGNUP_MAIL_KEY")
        }
        if let hex = try ConfigurationSources.secret(.verificationKey), !hex.isEmpty {
            configuration.verificationCodeKey = try LimitOptions.key(fromHex: hex, variable: "LIVESIGNUP_VERIFICATION_KEY")
        }
        let app = try SignupApplication(configuration: configuration, store: store, logger: logger)
        do {
            try app.start()
        } catch {
            logger.critical("Could not start", metadata: ["error": "\(error)"])
            throw ExitCode.failure
        }
        logger.info("Started", metadata: ["version": "\(SignupServerCommand.version)",
                                          "public": "\(configuration.publicDirectory.path)",
                                          "templates": "\(configuration.templatesDirectory.path)"])
        // Before the line below: whoever reads it may signal at once (a test, a supervisor),
        // and a signal before the handlers would kill the process instead of stopping it.
        ShutdownSignals.install {
            app.stop()
            Foundation.exit(0)
        }
        // Scripts and tests read this line to learn the port (e.g. with --port 0).
        FileHandle.standardOutput.write(Data("LiveSignup listening on http://\(server.host):\(app.port)\n".utf8))
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
