import Foundation

/// Every declared setting's effective value and where it came from, by precedence: a flag
/// over the environment over the file over the default. A secret comes from its variable,
/// its `…_FILE` variable (the file's contents) or the file's `<key>_file`, never a flag.
public struct SettingsResolution: Sendable {
    public struct Resolved: Sendable {
        public let declaration: SettingDeclaration
        /// Nil: unset (no default, given nowhere).
        public let value: SettingValue?
        public let source: SettingSource
    }

    public let settings: [Resolved]
    /// The file read, if any (the server says which at start).
    public let filePath: String?

    /// - Parameters:
    ///   - flags: the values given as flags (`CommandLineSettings`), by flag.
    ///   - readSecret: the contents of a file a secret's `_FILE` or `_file` names.
    public init(declarations: [SettingDeclaration], file: SettingsFile?, environment: [String: String],
                flags: [String: SettingValue] = [:],
                readSecret: (String) throws -> String = SettingsResolution.readSecretFile) throws(SettingProblems) {
        var problems: [SettingProblem] = []
        var settings: [Resolved] = []
        for declaration in declarations {
            var value: SettingValue?
            var source = SettingSource.defaultValue
            if let given = flags[declaration.flag], !declaration.secret {
                (value, source) = (given, .flag(declaration.flag))
            } else if let fromEnvironment = Self.environmentValue(of: declaration, in: environment, readSecret: readSecret,
                                                                   problems: &problems) {
                (value, source) = fromEnvironment
            } else if let entry = file?.entries[declaration.path], let file {
                if declaration.secret {
                    do {
                        let text = try readSecret(entry.value.text)
                        if let reason = Self.secretProblem(declaration, text) {
                            problems.append(SettingProblem(file: file.path, line: entry.line, key: declaration.path + "_file",
                                                           reason: reason))
                        }
                        value = .single(text)
                    } catch {
                        problems.append(SettingProblem(file: file.path, line: entry.line, key: declaration.path + "_file",
                                                       reason: "the file '\(entry.value.text)' cannot be read (\(SettingsFile.reason(error)))"))
                    }
                } else {
                    value = entry.value
                }
                source = .file(path: file.path, line: entry.line)
            } else {
                value = declaration.defaultText.map { declaration.kind.isList ? .list([$0]) : .single($0) }
            }
            settings.append(Resolved(declaration: declaration, value: value, source: source))
        }
        guard problems.isEmpty else { throw SettingProblems(problems) }
        self.settings = settings
        filePath = file?.path
    }

    /// The variable's value (or the contents of the file its `_FILE` twin names), checked.
    private static func environmentValue(of declaration: SettingDeclaration, in environment: [String: String],
                                         readSecret: (String) throws -> String,
                                         problems: inout [SettingProblem]) -> (SettingValue, SettingSource)? {
        if case .document = declaration.kind { return nil }
        let plain = environment[declaration.environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
        let named = environment[declaration.fileVariable].flatMap { $0.isEmpty ? nil : $0 }
        let text: String, variable: String
        switch (plain, named) {
        case (nil, nil):
            return nil
        case (.some, .some):
            problems.append(SettingProblem(key: declaration.environmentVariable,
                                           reason: "set together with \(declaration.fileVariable); set one"))
            return nil
        case (let value?, nil):
            (text, variable) = (value, declaration.environmentVariable)
        case (nil, let path?):
            do {
                text = try readSecret(path)
            } catch {
                problems.append(SettingProblem(key: declaration.fileVariable,
                                               reason: "the file '\(path)' cannot be read (\(SettingsFile.reason(error)))"))
                return nil
            }
            variable = declaration.fileVariable
        }
        let value: SettingValue = declaration.kind.isList
            ? .list(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
            : .single(text)
        // A secret is checked like any value, but never quoted in the problem.
        if let reason = declaration.secret ? Self.secretProblem(declaration, text) : declaration.problem(with: value) {
            problems.append(SettingProblem(key: variable, reason: reason))
            return nil
        }
        // A boolean as the flag takes it: 1/yes/on are "true".
        if declaration.kind.isBoolean, let on = SettingKind.boolean(text) {
            return (.single(String(on)), .environment(variable: variable))
        }
        return (value, .environment(variable: variable))
    }

    /// What is wrong with a secret, or nil, without its value (a check's reason may quote
    /// what it read).
    private static func secretProblem(_ declaration: SettingDeclaration, _ text: String) -> String? {
        guard let reason = declaration.problem(with: .single(text)) else { return nil }
        return text.isEmpty ? reason : reason.replacingOccurrences(of: text, with: "(the secret)")
    }

    /// A secret's file, as systemd credentials and container secrets leave it: its contents
    /// without the line end an editor or `echo` adds.
    public static func readSecretFile(_ path: String) throws -> String {
        var text = try String(contentsOfFile: path, encoding: .utf8)
        while text.last?.isNewline == true { text.removeLast() }
        return text
    }

    /// The effective value of `declaration`'s setting.
    public subscript(_ path: String) -> Resolved? { settings.first { $0.declaration.path == path } }

    /// The arguments that give the command line's parser every value that did not come from
    /// a flag or a default (the file's and the environment's), as flags: `--port=8080`, a list
    /// as one flag per item, a true boolean as the bare flag. Secrets are never arguments.
    public var arguments: [String] {
        settings.flatMap { resolved -> [String] in
            guard !resolved.declaration.secret, !resolved.declaration.fileOnly, let value = resolved.value else { return [] }
            switch resolved.source {
            case .defaultValue, .flag: return []
            case .file, .environment: break
            }
            let flag = "--" + resolved.declaration.flag
            switch value {
            case .list(let items): return items.map { "\(flag)=\($0)" }
            case .single(let text) where resolved.declaration.kind.isBoolean:
                return text == "true" ? [flag] : []
            case .single(let text): return ["\(flag)=\(text)"]
            }
        }
    }

    /// Each setting's effective value and its source, by section; secrets as `(set)` or
    /// `(unset)`, never their value.
    public var printout: String {
        var lines: [String] = []
        if let filePath { lines.append("# read from \(filePath)") }
        for section in SettingSection.allCases {
            let ours = settings.filter { $0.declaration.section == section }
            guard !ours.isEmpty else { continue }
            lines.append("\(section.rawValue):")
            for resolved in ours {
                let shown: String
                if resolved.declaration.secret {
                    shown = resolved.value == nil ? "(unset)" : "(set, redacted)"
                } else if resolved.declaration.fileOnly {
                    shown = resolved.value == nil ? "(unset)" : "(a mapping, as written in the file)"
                } else {
                    shown = resolved.value.map { SettingsDocuments.yamlValue($0).redactingURLPasswords } ?? "(unset)"
                }
                lines.append("  \(resolved.declaration.key): \(shown)    # \(resolved.source)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension String {
    /// `postgres://user:(redacted)@host/db`: a URL's password is a secret even where the
    /// setting that holds the URL is not.
    var redactingURLPasswords: String {
        replacing(#/(?<scheme>[a-z][a-z0-9+.-]*://[^:/@\s]+):[^@\s]+@/#) { "\($0.scheme):(redacted)@" }
    }
}

extension SettingKind {
    var isList: Bool { if case .list = self { return true } else { return false } }
    var isBoolean: Bool { if case .boolean = self { return true } else { return false } }
}
