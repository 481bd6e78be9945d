import ArgumentParser
import Foundation
import OperatorSettings
import SignupDomain

/// Where `serve` takes its settings from (issue 55): the configuration file (`--config FILE`
/// or `LIVESIGNUP_CONFIG`), the environment and the flags, each setting declared once in
/// `ServeSettings`. Resolved before the command line is parsed: what the file and the
/// environment give becomes the flags they stand for, after the ones typed (which win), so
/// the options' parsing, validation and `--help` stay one path; the secrets, which are never
/// flags, are read from here (`secret(_:)`).
enum ConfigurationSources {
    /// The settings the command started with, once resolved.
    nonisolated(unsafe) private(set) static var resolution: SettingsResolution?
    /// The configuration file read, if any (a secret no option names is resolved from it
    /// when asked for).
    nonisolated(unsafe) private(set) static var file: SettingsFile?

    /// The variable that names the file when `--config` is not given.
    static let fileVariable = "LIVESIGNUP_CONFIG"

    /// `arguments` with `--config FILE` taken out and the file's and the environment's values
    /// added as flags; the problems, each on its line, when any setting is wrong.
    static func prepareServe(_ arguments: [String], environment: [String: String]) throws(SettingProblems) -> [String] {
        try prepare(arguments, for: ServeSettings.all, environment: environment)
    }

    /// The same for a command whose options are `declarations` (a subset of serve's: the
    /// operator's commands read the same file and variables for the settings they share,
    /// `--database` first). The file is read against every declaration, so serve's file is
    /// every command's.
    static func prepare(_ arguments: [String], for declarations: [SettingDeclaration],
                        environment: [String: String]) throws(SettingProblems) -> [String] {
        var rest: [String] = []
        var configPath = environment[fileVariable].flatMap { $0.isEmpty ? nil : $0 }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--config" {
                guard index < arguments.count else {
                    throw SettingProblems([SettingProblem(key: "--config", reason: "needs the path of a configuration file")])
                }
                configPath = arguments[index]
                index += 1
            } else if argument.hasPrefix("--config=") {
                configPath = String(argument.dropFirst("--config=".count))
            } else {
                rest.append(argument)
            }
        }
        let flags = try CommandLineSettings(rest, declarations: declarations)
        let file = try configPath.map { path throws(SettingProblems) in try SettingsFile(path: path, declarations: ServeSettings.all) }
        let resolved = try SettingsResolution(declarations: declarations, file: file, environment: environment,
                                              flags: flags.values)
        resolution = resolved
        self.file = file
        return rest + resolved.arguments
    }

    /// The settings of serve that are options of `command` (its help lists them), for
    /// `prepare(_:for:environment:)`: no command keeps a list of its variables by hand.
    static func declarations(of command: ParsableCommand.Type) -> [SettingDeclaration] {
        let help = SignupServerCommand.helpMessage(for: command, includeHidden: true, columns: 10_000)
        // The option lines only ("  --database <database>  …"): a flag a help text mentions in
        // passing (`--publish-hours` in an abstract) is not an option of the command.
        let options = Set(help.matches(of: #/^ {2}(?:-[a-zA-Z], )?--([a-z0-9][a-z0-9-]*)/#.anchorsMatchLineEndings())
            .map { String($0.1) })
        return ServeSettings.all.filter { !$0.fileOnly && !$0.secret && options.contains($0.flag) }
    }

    /// A declared secret, by what it is (`.smtpPassword`); nil when unset.
    static func secret(_ secret: ServeSettings.Secret) throws -> String? {
        try self.secret(secret.declaration.environmentVariable)
    }

    /// A secret by its variable (`LIVESIGNUP_SMTP_PASSWORD`): a declared one as resolved (its
    /// variable, its `_FILE`, the file's `_file`); another (a provider's client secret, named by
    /// the policy) from its variable or its `_FILE`. Nil when unset.
    static func secret(_ variable: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        if let declaration = ServeSettings.all.first(where: { $0.secret && $0.environmentVariable == variable }) {
            if let resolved = resolution?[declaration.path] { return resolved.value?.text }
            // A command that resolved only its options (mail test): this one secret, now.
            do {
                let alone = try SettingsResolution(declarations: [declaration], file: file, environment: environment)
                return alone.settings.first?.value?.text
            } catch {
                throw ValidationError(error.description)
            }
        }
        if let value = environment[variable], !value.isEmpty { return value }
        guard let path = environment[variable + "_FILE"], !path.isEmpty else { return nil }
        do {
            return try SettingsResolution.readSecretFile(path)
        } catch {
            throw ValidationError("\(variable)_FILE: the file '\(path)' cannot be read (\(error.localizedDescription)).")
        }
    }

    /// An OpenID provider's client secret from the file named for its id in the configuration
    /// file (`providers.client_secret_files`); nil when none is named.
    static func providerSecret(id: String) throws -> String? {
        guard let resolved = resolution?["providers.client_secret_files"], let value = resolved.value else { return nil }
        guard let files = value.textMapping else {
            throw ValidationError("\(resolved.source): providers.client_secret_files: a mapping of provider ids to file paths.")
        }
        guard let path = files[id] else { return nil }
        do {
            return try SettingsResolution.readSecretFile(path)
        } catch {
            throw ValidationError("\(resolved.source): providers.client_secret_files.\(id): the file '\(path)' cannot be read (\(error.localizedDescription)).")
        }
    }

    /// The policy written in the configuration file (`policy.rules`), read with the file's
    /// own line numbers; nil when the file has none, or when `--policy` or LIVESIGNUP_POLICY
    /// names another (they win over the file). Both in the file is a mistake, refused.
    static func inlinePolicy() throws -> Policy? {
        guard let resolution, let path = resolution.filePath, resolution["policy.rules"]?.value != nil else { return nil }
        switch resolution["policy.source"]?.source {
        case .flag?, .environment?: return nil
        case .file(_, let line)?:
            throw ValidationError("\(path):\(line): policy.source: give the policy as source or as rules in one file, not both.")
        case .defaultValue?, nil: break
        }
        do {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            return try PolicyFile.parse(text, file: path, baseDirectory: URL(fileURLWithPath: path).deletingLastPathComponent(),
                                        at: ["policy", "rules"])
        } catch let error as PolicyFileError {
            throw ValidationError("The policy in the configuration file is refused: \(error)")
        }
    }

    /// Says each problem on standard error, as `config check` lists them, and what follows.
    static func report(_ problems: SettingProblems, consequence: String) {
        let lines = problems.problems.map { "signup-server: \($0)" } + ["signup-server: \(consequence)"]
        FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    }
}

/// `signup-server config …`: check a file, print the effective settings, write the reference.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check a configuration file, print the effective settings, or write the reference.",
        subcommands: [Check.self, Print.self, Reference.self, Example.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read FILE as serve would (with this environment): every problem as file:line: key: reason; exit 1 if there is one.")

        @Argument(help: "The configuration file (YAML).")
        var file: String

        func run() throws {
            do {
                // As serve reads it: the file with this environment, then every option's own
                // checks (a policy file that must load, a webhook URL that needs its secret).
                let arguments = try ConfigurationSources.prepareServe(["--config", file],
                                                                      environment: ProcessInfo.processInfo.environment)
                _ = try Serve.parse(arguments)
            } catch let problems as SettingProblems {
                ConfigurationSources.report(problems, consequence: "\(file): refused")
                throw ExitCode.failure
            } catch {
                ConfigurationSources.report(SettingProblems([SettingProblem(key: file, reason: Serve.message(for: error))]),
                                            consequence: "\(file): refused")
                throw ExitCode.failure
            }
            print("\(file): every setting is known, in bounds and consistent.")
        }
    }

    struct Print: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The effective value of every setting of serve and where it came from (default, file:line, environment, flag); secrets redacted.",
            discussion: "Takes the same --config FILE, LIVESIGNUP_* variables and flags as serve.")

        @Argument(parsing: .allUnrecognized, help: "serve's --config FILE and flags.")
        var arguments: [String] = []

        func run() throws {
            do {
                _ = try ConfigurationSources.prepareServe(arguments, environment: ProcessInfo.processInfo.environment)
            } catch {
                ConfigurationSources.report(error, consequence: "nothing printed")
                throw ExitCode.failure
            }
            print(ConfigurationSources.resolution?.printout ?? "", terminator: "")
        }
    }

    struct Reference: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write docs/CONFIGURATION.md: every setting, from its declaration.")

        func run() throws {
            // The catalog holds together, or the reference (and its staleness test) stops here:
            // each declared secret is one case code can ask for.
            let declared = Set(ServeSettings.all.filter(\.secret).map(\.path))
            precondition(Set(ServeSettings.Secret.allCases.map(\.rawValue)) == declared,
                         "ServeSettings.Secret must list exactly the declared secrets: \(declared.sorted())")
            print(ServeSettings.reference, terminator: "")
        }
    }

    struct Example: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write docs/examples/livesignup.yaml: every setting at its default, commented.")

        func run() throws { print(ServeSettings.example, terminator: "") }
    }
}

extension ServeSettings {
    static var reference: String {
        SettingsDocuments.reference(all, title: "Configuration reference", introduction: """
            `signup-server serve` reads its settings from a YAML file (`--config FILE`, or the
            `LIVESIGNUP_CONFIG` variable), the environment and its flags. For each setting a flag
            wins over the environment, the environment over the file, the file over the default;
            `signup-server config print` shows each effective value and where it came from, and
            `signup-server config check FILE` lists every problem of a file as `file:line: key: reason`.

            A secret is never a flag (a flag shows in `ps`) and never written in the file: give it
            in its variable, or put it in a file of its own and name that file with the variable's
            `_FILE` twin or the file's `<key>_file` key (the container and systemd-credentials
            convention; the file's final line end is not part of the secret).

            [docs/examples/livesignup.yaml](examples/livesignup.yaml) has every key at its default.
            """)
    }

    static var example: String {
        SettingsDocuments.example(all, header: """
            LiveSignup's configuration: every setting at its default (generated by
            `signup-server config example`; docs/CONFIGURATION.md says what each does).
            Start with `signup-server serve --config livesignup.yaml`; check a change with
            `signup-server config check livesignup.yaml`. A flag wins over the environment
            (LIVESIGNUP_*), the environment over this file.
            """)
    }
}
