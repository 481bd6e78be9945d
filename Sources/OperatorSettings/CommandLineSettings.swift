/// The declared settings given as flags on a command line (`--port 8080`, `--port=8080`, a
/// boolean's bare `--secure-cookies`, a list's flag given again), read by the declarations
/// so `config print` can say which came from a flag. Everything else is left for the
/// command's own parser, in order.
public struct CommandLineSettings: Sendable {
    /// By flag.
    public let values: [String: SettingValue]
    /// The arguments that are not declared settings (`--config FILE`, a subcommand's own).
    public let rest: [String]

    public init(_ arguments: [String], declarations: [SettingDeclaration]) throws(SettingProblems) {
        let byFlag = Dictionary(declarations.filter { !$0.secret && !$0.fileOnly }.map { ($0.flag, $0) }, uniquingKeysWith: { first, _ in first })
        var values: [String: SettingValue] = [:]
        var rest: [String] = []
        var problems: [SettingProblem] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument != "--" else {
                rest.append(argument)
                continue
            }
            let body = argument.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            guard let declaration = byFlag[name] else {
                rest.append(argument)
                continue
            }
            var inline: String? = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
            if declaration.kind.isBoolean {
                values[name] = .single(inline.flatMap(SettingKind.boolean).map { String($0) } ?? "true")
                continue
            }
            if inline == nil, index < arguments.count {
                inline = arguments[index]
                index += 1
            }
            guard let text = inline else {
                problems.append(SettingProblem(key: "--" + name, reason: "needs a value"))
                continue
            }
            if declaration.kind.isList {
                if case .list(let items)? = values[name] {
                    values[name] = .list(items + [text])
                } else {
                    values[name] = .list([text])
                }
            } else {
                values[name] = .single(text)
            }
        }
        guard problems.isEmpty else { throw SettingProblems(problems) }
        self.values = values
        self.rest = rest
    }
}
