import Yams

/// A setting's value as its sources spell it: one word or several. Numbers and booleans stay
/// text here (`"8080"`, `"true"`), checked against their kind where they were read, so every
/// source hands the server the same spelling its flag takes.
public enum SettingValue: Equatable, Sendable {
    case single(String)
    case list([String])

    /// The value as one line (`config print`): a list's items joined by commas.
    public var text: String {
        switch self {
        case .single(let text): return text
        case .list(let items): return items.joined(separator: ", ")
        }
    }
}

extension SettingValue {
    /// A mapping of names to text (`work: /run/…`), as a `.document` setting holds it; nil
    /// when it is not one.
    public var textMapping: [String: String]? {
        guard case .single(let text) = self, let loaded = try? Yams.load(yaml: text) as? [String: Any] else { return nil }
        var mapping: [String: String] = [:]
        for (key, value) in loaded {
            guard let text = value as? String else { return nil }
            mapping[key] = text
        }
        return mapping
    }
}

/// Where a setting's effective value came from (`config print`).
public enum SettingSource: Equatable, Sendable, CustomStringConvertible {
    case defaultValue
    case file(path: String, line: Int)
    case environment(variable: String)
    case flag(String)

    public var description: String {
        switch self {
        case .defaultValue: return "default"
        case .file(let path, let line): return "\(path):\(line)"
        case .environment(let variable): return "environment \(variable)"
        case .flag(let flag): return "flag --\(flag)"
        }
    }
}

/// One thing wrong with the configuration, said where it was found: `file:line: key: reason`
/// for the file, `VARIABLE: reason` for the environment, `--flag: reason` for a flag.
public struct SettingProblem: Error, Equatable, Sendable, CustomStringConvertible {
    public let place: String
    public let key: String
    public let reason: String

    public init(file: String, line: Int, key: String, reason: String) {
        place = "\(file):\(line)"
        self.key = key
        self.reason = reason
    }

    public init(key: String, reason: String) {
        place = ""
        self.key = key
        self.reason = reason
    }

    public var description: String { (place.isEmpty ? "" : place + ": ") + key + ": " + reason }
}

/// Every problem found, in the order they were found (a file is read to its end, so one
/// `config check` lists them all).
public struct SettingProblems: Error, Equatable, Sendable, CustomStringConvertible {
    public let problems: [SettingProblem]

    public init(_ problems: [SettingProblem]) { self.problems = problems }

    public var description: String { problems.map(\.description).joined(separator: "\n") }
}

extension SettingKind {
    /// `text` checked against this kind: nil when it is one, else why not. `text` is how a
    /// flag or a variable spells it (a boolean: 1/true/yes/on or 0/false/no/off).
    public func problem(with text: String) -> String? {
        switch self {
        case .text, .list, .document:
            return nil
        case .integer(let bounds):
            guard let number = Int(text.trimmingCharacters(in: .whitespaces)) else { return "'\(text)' is not a whole number" }
            if let bounds, !bounds.contains(number) {
                return "\(number) is out of bounds: \(bounds.lowerBound) to \(bounds.upperBound)"
            }
            return nil
        case .decimal(let bounds):
            guard let number = Double(text.trimmingCharacters(in: .whitespaces)), number.isFinite else {
                return "'\(text)' is not a number"
            }
            if let bounds, !bounds.contains(number) {
                return "\(SettingKind.format(number)) is out of bounds: \(SettingKind.format(bounds.lowerBound)) to \(SettingKind.format(bounds.upperBound))"
            }
            return nil
        case .boolean:
            return Self.boolean(text) == nil ? "'\(text)' is not true or false" : nil
        case .choice(let words):
            return words.contains(text) ? nil : "'\(text)' is not one of: \(words.joined(separator: ", "))"
        }
    }

    /// 1/true/yes/on and 0/false/no/off, in any case.
    public static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: return nil
        }
    }
}
