import Foundation
import Yams

/// A configuration file read against the declarations: each value it gives, with its line,
/// checked against its setting's kind. Read to its end, so every problem is reported at once
/// as `file:line: key: reason` (unknown keys with the closest known one suggested, wrong
/// types, values out of bounds, keys given twice, secrets written inline).
public struct SettingsFile: Sendable {
    public struct Entry: Sendable, Equatable {
        public let value: SettingValue
        public let line: Int

        public init(value: SettingValue, line: Int) {
            self.value = value
            self.line = line
        }
    }

    /// The path as the operator gave it (errors and `config print` name it so).
    public let path: String
    /// By declaration path (`server.port`). For a secret, the path of the file holding it.
    public let entries: [String: Entry]

    /// Reads `path` from disk.
    public init(path: String, declarations: [SettingDeclaration]) throws(SettingProblems) {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SettingProblems([SettingProblem(key: path, reason: "cannot be read (\(Self.reason(error)))")])
        }
        try self.init(path: path, text: text, declarations: declarations)
    }

    public init(path: String, text: String, declarations: [SettingDeclaration]) throws(SettingProblems) {
        self.path = path
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let YamlError.duplicatedKeysInMapping(duplicates, context) {
            throw SettingProblems(duplicates.map {
                SettingProblem(file: path, line: context.mark.line, key: $0, reason: "is given more than once in one mapping")
            })
        } catch {
            throw SettingProblems([Self.syntaxProblem(error, path: path)])
        }
        var reader = Reader(path: path, declarations: declarations)
        if let root { reader.readRoot(root) }
        guard reader.problems.isEmpty else { throw SettingProblems(reader.problems) }
        entries = reader.entries
    }

    private struct Reader {
        let path: String
        let declarations: [SettingDeclaration]
        var entries: [String: Entry] = [:]
        var problems: [SettingProblem] = []

        init(path: String, declarations: [SettingDeclaration]) {
            self.path = path
            self.declarations = declarations
        }

        mutating func problem(_ node: Node, _ key: String, _ reason: String) {
            problems.append(SettingProblem(file: path, line: node.mark?.line ?? 1, key: key, reason: reason))
        }

        mutating func readRoot(_ root: Node) {
            guard let mapping = root.mapping else {
                return problem(root, "(top)", "the file must be a mapping of sections (server:, store:, …)")
            }
            for (keyNode, value) in mapping {
                let name = keyNode.string ?? ""
                guard let section = SettingSection(rawValue: name) else {
                    let known = SettingSection.allCases.map(\.rawValue) + declarations.map(\.path)
                    problem(keyNode, name, "unknown section" + Self.suggestion(name, among: known))
                    continue
                }
                if Self.isNull(value) { continue }
                guard let settings = value.mapping else {
                    problem(value, name, "a section is a mapping of its settings")
                    continue
                }
                readSection(section, settings)
            }
        }

        mutating func readSection(_ section: SettingSection, _ settings: Node.Mapping) {
            let ours = declarations.filter { $0.section == section }
            for (keyNode, value) in settings {
                let key = keyNode.string ?? ""
                let path = section.rawValue + "." + key
                if let secret = ours.first(where: { $0.secret && $0.key == key }) {
                    problem(keyNode, path, "a secret is never written in the file: put it in a file of its own and name that file with \(secret.fileKey), or set \(secret.environmentVariable) or \(secret.fileVariable)")
                    continue
                }
                guard let declaration = ours.first(where: { $0.fileKey == key }) else {
                    // A key of another section, misplaced, is named with its section.
                    let hint = Self.suggestion(key, among: ours.map(\.fileKey))
                    let elsewhere = declarations.filter { $0.section != section }
                    let misplaced = Self.suggestion(key, among: elsewhere.map(\.fileKey)).isEmpty ? nil
                        : elsewhere.min { Self.distance(key, $0.fileKey) < Self.distance(key, $1.fileKey) }
                    problem(keyNode, path, "unknown setting" + (!hint.isEmpty ? hint
                        : misplaced.map { "; did you mean \($0.section.rawValue).\($0.fileKey)?" } ?? ""))
                    continue
                }
                if Self.isNull(value) { continue }
                if let read = self.value(of: value, for: declaration, path: path) {
                    entries[declaration.path] = Entry(value: read, line: value.mark?.line ?? keyNode.mark?.line ?? 1)
                }
            }
        }

        /// `node` as `declaration`'s value, or nil with its problem recorded.
        mutating func value(of node: Node, for declaration: SettingDeclaration, path: String) -> SettingValue? {
            if declaration.secret {
                guard let file = node.scalar?.string, !file.isEmpty else {
                    problem(node, path, "the path of a file holding the secret")
                    return nil
                }
                return .single(file)
            }
            let value: SettingValue
            switch declaration.kind {
            case .document:
                guard node.mapping != nil, let text = try? Yams.serialize(node: node) else {
                    problem(node, path, "a mapping (the setting written inline)")
                    return nil
                }
                return .single(text)
            case .list:
                if let sequence = node.sequence {
                    var items: [String] = []
                    for item in sequence {
                        guard let text = item.scalar?.string else {
                            problem(item, path, "each item of the list is one value")
                            return nil
                        }
                        items.append(text)
                    }
                    value = .list(items)
                } else if let text = node.scalar?.string {
                    value = .list([text])
                } else {
                    problem(node, path, "a list of values")
                    return nil
                }
            case .boolean:
                guard let bool = node.bool else {
                    problem(node, path, "true or false, not \(Self.spelled(node))")
                    return nil
                }
                value = .single(bool ? "true" : "false")
            case .integer:
                guard let scalar = node.scalar, node.int != nil else {
                    problem(node, path, "a whole number, not \(Self.spelled(node))")
                    return nil
                }
                value = .single(scalar.string)
            case .decimal:
                guard let scalar = node.scalar, node.float != nil || node.int != nil else {
                    problem(node, path, "a number, not \(Self.spelled(node))")
                    return nil
                }
                value = .single(scalar.string)
            case .text, .choice:
                guard let scalar = node.scalar else {
                    problem(node, path, "one value, not \(node.mapping != nil ? "a mapping" : "a list")")
                    return nil
                }
                value = .single(scalar.string)
            }
            if let reason = declaration.problem(with: value) {
                problem(node, path, reason)
                return nil
            }
            return value
        }

        /// An empty value (`key:` or `~`): left at its default.
        static func isNull(_ node: Node) -> Bool {
            guard case .scalar(let scalar) = node, scalar.style == .plain else { return false }
            return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
        }

        static func spelled(_ node: Node) -> String {
            if let scalar = node.scalar { return "'\(scalar.string)'" }
            return node.mapping != nil ? "a mapping" : "a list"
        }

        /// ", did you mean `x`?" for the known name closest to `name`, if any is close.
        static func suggestion(_ name: String, among known: [String]) -> String {
            let scored = known.map { ($0, Self.distance(name.lowercased(), $0.lowercased())) }
            guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, name.count / 3) else { return "" }
            return "; did you mean \(best.0)?"
        }

        /// Levenshtein distance, by characters.
        static func distance(_ a: String, _ b: String) -> Int {
            let a = Array(a), b = Array(b)
            if a.isEmpty { return b.count }
            if b.isEmpty { return a.count }
            var previous = Array(0...b.count)
            for i in 1...a.count {
                var current = [i] + Array(repeating: 0, count: b.count)
                for j in 1...b.count {
                    current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                }
                previous = current
            }
            return previous[b.count]
        }
    }

    private static func syntaxProblem(_ error: Error, path: String) -> SettingProblem {
        switch error {
        case YamlError.scanner(_, let problem, let mark, _), YamlError.parser(_, let problem, let mark, _),
             YamlError.composer(_, let problem, let mark, _):
            return SettingProblem(file: path, line: mark.line, key: "(syntax)", reason: problem)
        default:
            return SettingProblem(file: path, line: 1, key: "(syntax)", reason: "\(error)")
        }
    }

    static func reason(_ error: Error) -> String {
        (error as NSError).localizedFailureReason ?? (error as NSError).localizedDescription
    }
}
