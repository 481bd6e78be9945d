import OperatorSettings

/// One declaration of every kind a setting can be, in every section's shape: the reader is the
/// server's; the server's own list lives in its executable, which no other target can import.
private let declarations: [SettingDeclaration] = [
    SettingDeclaration(.server, "host", flag: "host", .text, default: "127.0.0.1", help: "h"),
    SettingDeclaration(.server, "port", flag: "port", .integer(1...65535), default: "8080", help: "p"),
    SettingDeclaration(.server, "public_origin", flag: "public-origin", .list, help: "o",
                       check: { $0.hasPrefix("http") ? nil : "not an origin" }),
    SettingDeclaration(.server, "form_token_key", flag: "form-token-key", .text, help: "k", secret: true),
    SettingDeclaration(.store, "engine", flag: "store", .choice(["sqlite", "postgres"]), default: "sqlite", help: "s"),
    SettingDeclaration(.policy, "rules", flag: "policy-rules", .document, help: "r"),
    SettingDeclaration(.limits, "edits_per_second", flag: "edits-per-second", .decimal(0.1...1000), help: "e"),
    SettingDeclaration(.logging, "json", flag: "log-json", .boolean, default: "false", help: "j"),
]

extension FuzzTarget {
    /// The configuration file (`--config`): YAML read with its line numbers.
    static let settingsFile = FuzzTarget(
        name: "settings-file",
        summary: "configuration files: SettingsFile(path:text:declarations:)"
    ) { input in
        do throws(SettingProblems) {
            let file = try SettingsFile(path: "fuzz.yaml", text: input.text, declarations: declarations)
            for (path, entry) in file.entries {
                fuzzCheck(declarations.contains { $0.path == path }, "an entry for a setting nobody declared: \(path)")
                fuzzCheck(entry.line >= 1, "an entry without its line")
            }
        } catch {
            fuzzCheck(!error.problems.isEmpty, "a file refused without a problem named")
        }
    }
}
