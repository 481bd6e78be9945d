import ArgumentParser
import Foundation
import OperatorSettings

/// Where `serve` takes its settings from (issue 55): the configuration file (`--config FILE`
/// or `LIVESIGNUP_CONFIG`), the environment and the flags, each setting declared once in
/// `ServeSettings`. Resolved before the command line is parsed: what the file and the
/// environment give becomes the flags they stand for, after the ones typed (which win), so
/// the options' parsing, validation and `--help` stay one path; the secrets, which are never
/// flags, are read from here (`secret(_:)`).
enum ConfigurationSources {
    /// The settings `serve` started with, once resolved (nil for the other commands).
    nonisolated(unsafe) private(set) static var resolution: SettingsResolution?

    /// The variable that names the file when `--config` is not given.
    static let fileVariable = "LIVESIGNUP_CONFIG"

    /// `arguments` with `--config FILE` taken out and the file's and the environment's values
    /// added as flags; the problems, each on its line, when any setting is wrong.
    static func prepareServe(_ arguments: [String], environment: [String: String]) throws(SettingProblems) -> [String] {
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
        let flags = try CommandLineSettings(rest, declarations: ServeSettings.all)
        let file = try configPath.map { path throws(SettingProblems) in try SettingsFile(path: path, declarations: ServeSettings.all) }
        let resolved = try SettingsResolution(declarations: ServeSettings.all, file: file, environment: environment,
                                              flags: flags.values)
        resolution = resolved
        return rest + resolved.arguments
    }

    /// A secret by its variable (`LIVESIGNUP_SMTP_PASSWORD`): a declared one as resolved (its
    /// variable, its `_FILE`, the file's `_file`); another (a provider's client secret, named by
    /// the policy) from its variable or its `_FILE`. Nil when unset.
    static func secret(_ variable: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        if let resolution, let resolved = resolution.settings.first(where: { $0.declaration.environmentVariable == variable }) {
            return resolved.value?.text
        }
        if let value = environment[variable], !value.isEmpty { return value }
        guard let path = environment[variable + "_FILE"], !path.isEmpty else { return nil }
        do {
            return try SettingsResolution.readSecretFile(path)
        } catch {
            throw ValidationError("\(variable)_FILE: the file '\(path)' cannot be read (\(error.localizedDescription)).")
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
            abstract: "Read FILE as serve would: every problem as file:line: key: reason; exit 1 if there is one.")

        @Argument(help: "The configuration file (YAML).")
        var file: String

        func run() throws {
            do {
                let read = try SettingsFile(path: file, declarations: ServeSettings.all)
                _ = try SettingsResolution(declarations: ServeSettings.all, file: read, environment: [:])
            } catch {
                ConfigurationSources.report(error as? SettingProblems ?? SettingProblems([]),
                                            consequence: "\(file): refused")
                throw ExitCode.failure
            }
            print("\(file): every setting is known and in bounds.")
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
                let unparsed = try ConfigurationSources.prepareServe(arguments, environment: ProcessInfo.processInfo.environment)
                _ = unparsed
            } catch {
                ConfigurationSources.report(error, consequence: "nothing printed")
                throw ExitCode.failure
            }
            print(ConfigurationSources.resolution?.printout ?? "", terminator: "")
        }
    }

    struct Reference: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write docs/CONFIGURATION.md: every setting, from its declaration.")

        func run() throws { print(ServeSettings.reference, terminator: "") }
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
