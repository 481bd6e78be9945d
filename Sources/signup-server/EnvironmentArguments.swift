import Foundation

/// Every option can also come from an environment variable `LIVESIGNUP_<NAME>` (the long
/// name upper-cased, dashes as underscores: `--idle-timeout` ← `LIVESIGNUP_IDLE_TIMEOUT`). A
/// flag on the command line wins over the environment, the environment over the default.
/// The variables are turned into arguments before parsing, so validation and `--help` treat
/// both the same.
enum EnvironmentArguments {
    enum Kind {
        /// Takes a value.
        case option
        /// Takes a value and may be given several times; the variable holds a comma-separated list.
        case repeatable
        /// Takes no value; the variable is 1/true/yes/on to set it.
        case flag
    }

    /// The variable for a long option name.
    static func variable(for name: String) -> String {
        "LIVESIGNUP_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// `arguments` plus an argument for each option set in `environment` but not on the command
    /// line. `options` names the options of the subcommand being run.
    static func merge(_ arguments: [String], environment: [String: String],
                      options: [(name: String, kind: Kind)]) -> [String] {
        var merged = arguments
        for (name, kind) in options {
            let flag = "--" + name
            let given = arguments.contains { $0 == flag || $0.hasPrefix(flag + "=") }
            guard !given, let value = environment[variable(for: name)] else { continue }
            switch kind {
            // "--name=value", so a value that starts with "-" is not taken for an option.
            case .option:
                merged.append("\(flag)=\(value)")
            case .repeatable:
                for item in value.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
                where !item.isEmpty {
                    merged.append("\(flag)=\(item)")
                }
            case .flag:
                if ["1", "true", "yes", "on"].contains(value.lowercased()) { merged.append(flag) }
            }
        }
        return merged
    }
}
