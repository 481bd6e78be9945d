import Foundation
import Yams

/// Why a policy file was refused: the file, the line (when one is to blame) and the reason,
/// as `file:line: reason`, the way compilers report, so an editor can jump there.
public struct PolicyFileError: Error, CustomStringConvertible, Sendable, Equatable {
    public let file: String
    public let line: Int?
    public let reason: String

    public var description: String {
        line.map { "\(file):\($0): \(reason)" } ?? "\(file): \(reason)"
    }
}

/// Reads a policy file (YAML, or JSON, which YAML includes) into a `Policy`. Every setting is
/// checked, unknown ones included (a misspelt setting must not silently do nothing); the
/// first problem stops the load with its line. Settings a file leaves out take
/// `Policy.defaults`' values (the classic checklist's). docs/POLICY.md describes the format.
public enum PolicyFile {
    public static func load(path: String) throws(PolicyFileError) -> Policy {
        let text = try read(path: path)
        let base = URL(fileURLWithPath: path).deletingLastPathComponent()
        let fallbackName = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        return try parse(text, file: path, baseDirectory: base, fallbackName: fallbackName)
    }

    /// - Parameters:
    ///   - file: how errors name the file.
    ///   - baseDirectory: where relative `reserved_file` and `blocklist` paths start.
    public static func parse(_ text: String, file: String, baseDirectory: URL,
                             fallbackName: String = "custom") throws(PolicyFileError) -> Policy {
        let reader = PolicyFileReader(file: file, baseDirectory: baseDirectory)
        return try reader.policy(from: compose(text, file: file), fallbackName: fallbackName)
    }

    /// A policy written inline in another YAML file, under `keys` (a configuration file's
    /// `policy.rules`): read from that file's whole text, so every complaint names the
    /// file's own line.
    public static func parse(_ text: String, file: String, baseDirectory: URL, at keys: [String],
                             fallbackName: String = "custom") throws(PolicyFileError) -> Policy {
        var node = try compose(text, file: file)
        for key in keys {
            guard let next = node[key] else {
                throw PolicyFileError(file: file, line: node.mark?.line, reason: "has no \(keys.joined(separator: "."))")
            }
            node = next
        }
        return try PolicyFileReader(file: file, baseDirectory: baseDirectory).policy(from: node, fallbackName: fallbackName)
    }

    /// A settings file's text (policy files and language catalogs), or why it cannot be read.
    static func read(path: String) throws(PolicyFileError) -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw PolicyFileError(file: path, line: nil, reason: "cannot be read: \(Self.describe(error))")
        }
    }

    /// A settings file's node tree (line numbers kept for complaints), or where it is broken.
    static func compose(_ text: String, file: String) throws(PolicyFileError) -> Node {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw PolicyFileError(file: file, line: Self.line(of: error), reason: "is not valid YAML or JSON: \(Self.problem(of: error))")
        } catch {
            throw PolicyFileError(file: file, line: nil, reason: "is not valid YAML or JSON: \(error)")
        }
        guard let root else { throw PolicyFileError(file: file, line: nil, reason: "is empty") }
        return root
    }

    /// Whether `tag` is a language tag as files here spell it: lower case, like en, de or pt-br.
    static func isLanguageTag(_ tag: String) -> Bool {
        tag.wholeMatch(of: #/[a-z]{2,3}(-[a-z0-9]{2,8})*/#) != nil
    }

    private static func line(of error: YamlError) -> Int? {
        switch error {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): return mark.line
        case .duplicatedKeysInMapping(_, let context): return context.mark.line
        default: return nil
        }
    }

    private static func problem(of error: YamlError) -> String {
        switch error {
        case .scanner(let context, let problem, _, _), .parser(let context, let problem, _, _),
             .composer(let context, let problem, _, _):
            return context.map { "\(problem) (\($0.text))" } ?? problem
        case .duplicatedKeysInMapping(let duplicates, _):
            return "a setting is given twice: \(duplicates.joined(separator: ", "))"
        default:
            return "\(error)"
        }
    }

    static func describe(_ error: any Error) -> String {
        let nsError = error as NSError
        if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileReadNoSuchFileError { return "no such file" }
        if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileReadNoPermissionError { return "permission denied" }
        return nsError.localizedDescription
    }
}

/// Walks the composed YAML nodes, so every complaint can name its line.
struct PolicyFileReader {
    let file: String
    let baseDirectory: URL

    func fail(_ node: Node?, _ reason: String) -> PolicyFileError {
        PolicyFileError(file: file, line: node?.mark?.line, reason: reason)
    }

    /// A mapping's settings; refuses keys not in `known`.
    func settings(_ node: Node, at path: String, known: [String]) throws(PolicyFileError) -> [String: (key: Node, value: Node)] {
        guard let mapping = node.mapping else {
            throw fail(node, path.isEmpty ? "a policy file must be a mapping of settings (name:, username:, password:, …)"
                                          : "'\(path)' must be a mapping of settings")
        }
        var result: [String: (key: Node, value: Node)] = [:]
        for (key, value) in mapping {
            guard let name = key.scalar?.string else { throw fail(key, "a setting's name must be text") }
            let full = path.isEmpty ? name : "\(path).\(name)"
            guard known.contains(name) else {
                throw fail(key, "unknown setting '\(full)'; \(path.isEmpty ? "the file" : "'\(path)'") may have: \(known.joined(separator: ", "))")
            }
            result[name] = (key, value)
        }
        return result
    }

    func string(_ node: Node, _ path: String) throws(PolicyFileError) -> String {
        guard let scalar = node.scalar else { throw fail(node, "'\(path)' must be text") }
        return scalar.string
    }

    func integer(_ node: Node, _ path: String, in range: ClosedRange<Int>) throws(PolicyFileError) -> Int {
        guard let scalar = node.scalar, let value = Int(scalar.string) else {
            throw fail(node, "'\(path)' must be a whole number")
        }
        guard range.contains(value) else {
            throw fail(node, "'\(path)' must be \(range.lowerBound) to \(range.upperBound), not \(value)")
        }
        return value
    }

    func boolean(_ node: Node, _ path: String) throws(PolicyFileError) -> Bool {
        switch node.scalar?.string.lowercased() {
        case "true": return true
        case "false": return false
        default: throw fail(node, "'\(path)' must be true or false")
        }
    }

    func strings(_ node: Node, _ path: String) throws(PolicyFileError) -> [String] {
        guard let sequence = node.sequence else { throw fail(node, "'\(path)' must be a list, like [a, b]") }
        var values: [String] = []
        for item in sequence {
            guard let scalar = item.scalar else { throw fail(item, "each item of '\(path)' must be text") }
            let value = scalar.string.trimmingCharacters(in: .whitespaces)
            guard !value.isEmpty else { throw fail(item, "an item of '\(path)' is empty") }
            values.append(value)
        }
        return values
    }

    /// A `texts_by_language` mapping's entries, each under a checked language tag.
    func languages(_ node: Node, at path: String) throws(PolicyFileError) -> [(tag: String, key: Node, value: Node)] {
        guard let mapping = node.mapping else {
            throw fail(node, "'\(path)' must map language tags (en, de, pt-br, …) to texts")
        }
        var entries: [(tag: String, key: Node, value: Node)] = []
        for (key, value) in mapping {
            guard let tag = key.scalar?.string, PolicyFile.isLanguageTag(tag) else {
                throw fail(key, "'\(key.scalar?.string ?? "?")' is not a language tag in lower case, like en, de or pt-br")
            }
            entries.append((tag, key, value))
        }
        return entries
    }

    /// Non-empty lines of a text file beside the policy file, `#` comments skipped.
    func lines(ofFileAt node: Node, _ path: String) throws(PolicyFileError) -> (path: String, lines: [String]) {
        let name = try string(node, path)
        let url = name.hasPrefix("/") ? URL(fileURLWithPath: name) : baseDirectory.appendingPathComponent(name)
        // Looked at before it is opened: opening a FIFO for reading waits for a writer, and a
        // device or a huge file would be read without end.
        var info = stat()
        if stat(url.path, &info) == 0 {
            if let kind = Self.notRegular(info.st_mode) {
                throw fail(node, "'\(path)': \(url.path) is not a regular file (it is \(kind))")
            }
            if info.st_size > Self.maxListFileBytes {
                throw fail(node, "'\(path)': \(url.path) is \(info.st_size / 1_048_576) MiB; a list file may have at most \(Self.maxListFileBytes / 1_048_576) MiB")
            }
        }
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw fail(node, "'\(path)': \(url.path) cannot be read: \(PolicyFile.describe(error))")
        }
        let lines = text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        return (url.path, lines)
    }

    /// Word lists (reserved names, blocked passwords) are small; this stops a wrong path
    /// (a disk image, a log) from being read into memory at start.
    static let maxListFileBytes = 64 * 1_048_576

    /// What a file that is not a regular one is, in words; nil for a regular file.
    static func notRegular(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        default: return "not a file"
        }
    }

    func policy(from root: Node, fallbackName: String) throws(PolicyFileError) -> Policy {
        var policy = Policy.defaults
        policy.name = fallbackName
        let top = try settings(root, at: "", known: ["name", "summary", "service_name", "username", "password",
                                                     "email", "availability_debounce_ms", "texts", "texts_by_language", "fields",
                                                     "second_factor", "second_factor_wrong_codes", "providers", "clients"])
        if let name = top["name"] {
            policy.name = try string(name.value, "name")
        }
        guard !policy.name.isEmpty, policy.name.count <= 40,
              policy.name.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_") })
        else {
            throw fail(top["name"]?.value, "'name' must be 1 to 40 letters, digits, '-' or '_' (it is shown to operators and in the page's data attributes), not '\(policy.name)'")
        }
        if let summary = top["summary"] { policy.summary = try string(summary.value, "summary") }
        if let service = top["service_name"] {
            policy.serviceName = try string(service.value, "service_name")
            guard !policy.serviceName.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw fail(service.value, "'service_name' must not be empty")
            }
        }
        if let rule = top["second_factor"] {
            let text = try string(rule.value, "second_factor")
            guard let parsed = SecondFactorRule(rawValue: text) else {
                throw fail(rule.value, "'second_factor' must be off, optional or required, not '\(text)'")
            }
            policy.secondFactor = parsed
        }
        if let wrongCodes = top["second_factor_wrong_codes"] {
            policy.secondFactorLockout.wrongCodes = try integer(wrongCodes.value, "second_factor_wrong_codes",
                                                                in: 1...SecondFactorLockout.maximum)
        }
        if let providers = top["providers"] {
            policy.providers = try readProviders(providers.value)
        }
        if let clients = top["clients"] {
            policy.clients = try readClients(clients.value)
        }
        if let debounce = top["availability_debounce_ms"] {
            policy.availabilityDebounceMilliseconds = try integer(debounce.value, "availability_debounce_ms", in: 0...10_000)
        }
        var charactersNode: Node?
        if let username = top["username"] {
            charactersNode = try readUsername(username.value, into: &policy)
        }
        if let password = top["password"] {
            try readPassword(password.value, into: &policy)
        }
        if let email = top["email"] {
            try readEmail(email.value, into: &policy)
        }
        if let texts = top["texts"] {
            policy.texts = try readTexts(texts.value, at: "texts")
        }
        var languageNodes: [String: Node] = [:]
        if let byLanguage = top["texts_by_language"] {
            for entry in try languages(byLanguage.value, at: "texts_by_language") {
                policy.textsByLanguage[entry.tag] = try readTexts(entry.value, at: "texts_by_language.\(entry.tag)")
                languageNodes[entry.tag] = entry.key
            }
        }
        if let fields = top["fields"] {
            policy.fields = try readFields(fields.value)
        }
        // A different character rule with the built-in text would tell people the wrong thing,
        // in any language that gets the policy's own wording.
        if policy.usernameCharacters != .standard {
            let charsetTexts = [PolicyText.usernameCharsetText, .usernameCharsetMessage]
            let missing = charsetTexts.filter { !policy.texts.replacedTexts.contains($0) }
            if !missing.isEmpty {
                throw fail(charactersNode, "'username.characters' differs from the built-in rule, so 'texts' must say what is allowed: give \(missing.map { "'\($0.rawValue)'" }.joined(separator: " and "))")
            }
            for (tag, texts) in policy.textsByLanguage.sorted(by: { $0.key < $1.key }) {
                let missing = charsetTexts.filter { !texts.replacedTexts.contains($0) }
                if !missing.isEmpty {
                    throw fail(languageNodes[tag], "'username.characters' differs from the built-in rule, so 'texts_by_language.\(tag)' must say what is allowed too: give \(missing.map { "'\($0.rawValue)'" }.joined(separator: " and "))")
                }
            }
        }
        return policy
    }

    /// `providers`: the OpenID Connect providers a person may sign up or sign in through.
    private func readProviders(_ node: Node) throws(PolicyFileError) -> [ProviderDeclaration] {
        guard let sequence = node.sequence else {
            throw fail(node, "'providers' must be a list of providers, each with id, name, issuer, client_id and client_secret_env")
        }
        var declarations: [ProviderDeclaration] = []
        for item in sequence {
            let entry = try settings(item, at: "providers", known: ["id", "name", "issuer", "client_id", "client_secret_env",
                                                                    "scopes", "trust_email_verified", "endpoint_hosts"])
            for required in ["id", "name", "issuer", "client_id", "client_secret_env"] where entry[required] == nil {
                throw fail(item, "a provider needs '\(required)'")
            }
            let id = try string(entry["id"]!.value, "providers.id")
            guard ProviderDeclaration.isValidID(id) else {
                throw fail(entry["id"]!.value, "a provider's 'id' must be 1 to 32 of a-z, 0-9, '-' and '_' (it is in URLs and metrics), not '\(id)'")
            }
            guard !declarations.contains(where: { $0.id == id }) else {
                throw fail(entry["id"]!.value, "the provider id '\(id)' is given twice")
            }
            let path = "providers.\(id)"
            let name = try string(entry["name"]!.value, "\(path).name")
            guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 60 else {
                throw fail(entry["name"]!.value, "'\(path).name' must be 1 to 60 characters (it is on the button)")
            }
            let issuer = try string(entry["issuer"]!.value, "\(path).issuer")
            guard let url = URL(string: issuer), let host = url.host, url.query == nil, url.fragment == nil,
                  url.scheme == "https" || (url.scheme == "http" && Self.isLoopback(host)) else {
                throw fail(entry["issuer"]!.value, "'\(path).issuer' must be an https URL without query or fragment (http only on loopback, for tests), not '\(issuer)'")
            }
            let clientID = try string(entry["client_id"]!.value, "\(path).client_id")
            guard !clientID.isEmpty else { throw fail(entry["client_id"]!.value, "'\(path).client_id' must not be empty") }
            let variable = try string(entry["client_secret_env"]!.value, "\(path).client_secret_env")
            guard variable.wholeMatch(of: #/[A-Z_][A-Z0-9_]*/#) != nil else {
                throw fail(entry["client_secret_env"]!.value, "'\(path).client_secret_env' names an environment variable (A-Z, 0-9, '_'), not '\(variable)'; the secret itself never goes in the file")
            }
            var declaration = ProviderDeclaration(id: id, name: name, issuer: issuer, clientID: clientID, clientSecretVariable: variable)
            if let scopes = entry["scopes"] {
                declaration.scopes = try strings(scopes.value, "\(path).scopes")
                guard declaration.scopes.contains("openid") else {
                    throw fail(scopes.value, "'\(path).scopes' must include openid (it is OpenID Connect)")
                }
            }
            if let trust = entry["trust_email_verified"] {
                declaration.trustsEmailVerified = try boolean(trust.value, "\(path).trust_email_verified")
            }
            if let hosts = entry["endpoint_hosts"] {
                declaration.endpointHosts = try strings(hosts.value, "\(path).endpoint_hosts")
                for host in declaration.endpointHosts where host.isEmpty || host.contains(where: { "/:@?# ".contains($0) }) {
                    throw fail(hosts.value, "'\(path).endpoint_hosts' lists host names only (such as oauth2.googleapis.com), not '\(host)'")
                }
            }
            declarations.append(declaration)
        }
        return declarations
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// Returns the `characters` node, for a later complaint about its texts.
    private func readUsername(_ node: Node, into policy: inout Policy) throws(PolicyFileError) -> Node? {
        let username = try settings(node, at: "username", known: ["min_length", "max_length", "characters", "reserved", "reserved_file"])
        let minimum = try username["min_length"].map { (entry) throws(PolicyFileError) in try integer(entry.value, "username.min_length", in: 1...256) }
            ?? policy.usernameLength.lowerBound
        let maximum = try username["max_length"].map { (entry) throws(PolicyFileError) in try integer(entry.value, "username.max_length", in: 1...256) }
            ?? policy.usernameLength.upperBound
        guard minimum <= maximum else {
            throw fail(username["max_length"]?.value ?? username["min_length"]?.value,
                       "'username.max_length' (\(maximum)) is below 'username.min_length' (\(minimum))")
        }
        policy.usernameLength = minimum...maximum
        if let characters = username["characters"] {
            let classes = try settings(characters.value, at: "username.characters", known: ["letters", "digits", "symbols"])
            var rule = UsernameCharacters.standard
            if let letters = classes["letters"] { rule.letters = try boolean(letters.value, "username.characters.letters") }
            if let digits = classes["digits"] { rule.digits = try boolean(digits.value, "username.characters.digits") }
            if let symbols = classes["symbols"] {
                rule.symbols = try string(symbols.value, "username.characters.symbols")
                if let bad = rule.symbols.unicodeScalars.first(where: {
                    $0.properties.isWhitespace || $0.properties.generalCategory == .control || $0.properties.generalCategory == .format
                }) {
                    throw fail(symbols.value, "'username.characters.symbols' may not hold spaces or invisible characters (U+\(String(bad.value, radix: 16, uppercase: true)))")
                }
            }
            guard rule.letters || rule.digits || !rule.symbols.isEmpty else {
                throw fail(characters.value, "'username.characters' allows nothing: turn on letters or digits, or list symbols")
            }
            policy.usernameCharacters = rule
        }
        var reserved: [String] = []
        if let inline = username["reserved"] { reserved += try strings(inline.value, "username.reserved") }
        if let file = username["reserved_file"] { reserved += try lines(ofFileAt: file.value, "username.reserved_file").lines }
        if username["reserved"] != nil || username["reserved_file"] != nil { policy.reservedUsernames = reserved }
        return username["characters"]?.value
    }

    private func readPassword(_ node: Node, into policy: inout Policy) throws(PolicyFileError) {
        let password = try settings(node, at: "password", known: ["min_length", "max_bytes", "require_uppercase", "min_strength",
                                                                 "blocklist", "context_words"])
        if let minimum = password["min_length"] {
            policy.passwordMinimumLength = try integer(minimum.value, "password.min_length", in: 1...1024)
        }
        if let maximum = password["max_bytes"] {
            policy.passwordMaximumBytes = try integer(maximum.value, "password.max_bytes", in: 16...8192)
        }
        guard policy.passwordMinimumLength <= policy.passwordMaximumBytes else {
            throw fail(password["max_bytes"]?.value ?? password["min_length"]?.value,
                       "'password.max_bytes' (\(policy.passwordMaximumBytes)) is below 'password.min_length' (\(policy.passwordMinimumLength)): no password could pass")
        }
        if let uppercase = password["require_uppercase"] {
            policy.requiresUppercase = try boolean(uppercase.value, "password.require_uppercase")
        }
        if let strength = password["min_strength"] {
            policy.minimumStrengthScore = try integer(strength.value, "password.min_strength", in: 0...4)
        }
        if let blocklist = password["blocklist"] {
            let source = try string(blocklist.value, "password.blocklist")
            switch source {
            case "builtin":
                policy.blocklist = .builtIn
                policy.blocklistSource = "builtin"
            case "none":
                policy.blocklist = CommonPasswords([])
                policy.blocklistSource = "none"
            default:
                let list = try lines(ofFileAt: blocklist.value, "password.blocklist")
                policy.blocklist = CommonPasswords(list.lines)
                policy.blocklistSource = list.path
            }
        }
        if let words = password["context_words"] {
            policy.contextWords = try strings(words.value, "password.context_words")
        }
    }

    /// `email:`: the domains typos are corrected towards, and the throwaway ones refused.
    private func readEmail(_ node: Node, into policy: inout Policy) throws(PolicyFileError) {
        let email = try settings(node, at: "email", known: ["common_domains", "disposable", "disposable_file"])
        if let common = email["common_domains"] {
            // An empty list is allowed: it turns suggestions off.
            guard let items = common.value.sequence else { throw fail(common.value, "'email.common_domains' must be a list, like [gmail.com, web.de]") }
            let domains = items.isEmpty ? [] : try strings(common.value, "email.common_domains")
            if let bad = domains.first(where: { !EmailAddress.isValid("a@" + $0) }) {
                throw fail(common.value, "'email.common_domains' holds '\(bad)', which is not a domain like example.com")
            }
            policy.emailSuggestions = EmailDomainSuggester(commonDomains: domains)
        }
        var disposable: [String] = []
        var sources: [String] = []
        if let inline = email["disposable"] {
            let listed = try strings(inline.value, "email.disposable")
            if let bad = listed.first(where: { !EmailAddress.isValid("a@" + $0) }) {
                throw fail(inline.value, "'email.disposable' holds '\(bad)', which is not a domain like example.com")
            }
            disposable += listed
            sources.append("\(disposable.count) listed")
        }
        if let file = email["disposable_file"] {
            let list = try lines(ofFileAt: file.value, "email.disposable_file")
            // A line that is not a domain (a comment after one, a stray word) would silently
            // block nothing: refuse the file instead, naming the line.
            if let bad = list.lines.first(where: { !EmailAddress.isValid("a@" + $0) }) {
                throw fail(file.value, "'email.disposable_file': \(list.path) has '\(bad)', which is not a domain like example.com (one domain a line; comments on lines of their own, starting with #)")
            }
            disposable += list.lines
            sources.append(list.path)
        }
        if !sources.isEmpty {
            policy.disposableEmailDomains = DisposableEmailDomains(disposable)
            policy.disposableEmailSource = sources.joined(separator: " + ")
        }
    }

    /// `fields:`, a list in page order. Each built-in field appears once (the account needs
    /// them); declared fields have a kind, requirements that fit it, and a label.
    private func readFields(_ node: Node) throws(PolicyFileError) -> [FieldDeclaration] {
        guard let items = node.sequence, !items.isEmpty else {
            throw fail(node, "'fields' must be a list of fields in page order, each like {name: terms, kind: checkbox, …}")
        }
        var declarations: [FieldDeclaration] = []
        var seen: [String: Node] = [:]
        for item in items {
            let declaration = try readField(item)
            if seen[declaration.name] != nil {
                throw fail(item, "field '\(declaration.name)' is declared twice")
            }
            seen[declaration.name] = item
            declarations.append(declaration)
        }
        let missing = FieldDeclaration.builtIn.map(\.name).filter { seen[$0] == nil }
        if !missing.isEmpty {
            throw fail(node, "'fields' must list the built-in fields every account needs: \(missing.joined(separator: ", ")) \(missing.count == 1 ? "is" : "are") missing")
        }
        return declarations
    }

    private static let fieldSettings = [
        "name", "kind", "label", "hint", "autocomplete", "required", "min_length", "max_length", "pattern",
        "accepted", "options", "stored", "link_url", "texts", "texts_by_language",
    ]

    private func readField(_ node: Node) throws(PolicyFileError) -> FieldDeclaration {
        let entries = try settings(node, at: "fields[]", known: Self.fieldSettings)
        guard let nameEntry = entries["name"] else { throw fail(node, "a field needs a 'name'") }
        let name = try string(nameEntry.value, "fields[].name")
        let path = "fields.\(name)"
        guard name.wholeMatch(of: #/[a-z][a-z0-9_]{0,31}/#) != nil else {
            throw fail(nameEntry.value, "field name '\(name)' must be 1 to 32 lower-case letters, digits or '_', starting with a letter (it is the form field's name on the wire)")
        }
        guard !FieldDeclaration.reservedNames.contains(name) else {
            throw fail(nameEntry.value, "field name '\(name)' is reserved: the form posts it for its own use (reserved: \(FieldDeclaration.reservedNames.sorted().joined(separator: ", ")))")
        }
        if let builtIn = FieldDeclaration.Kind(rawValue: name), builtIn.isBuiltIn {
            // A built-in field: its rules are the policy's `username:` / `password:` settings.
            let allowed = ["name", "kind", "label", "hint", "texts", "texts_by_language"]
            if let other = entries.keys.sorted().first(where: { !allowed.contains($0) }) {
                let rulesAt = builtIn.rulesSetting.map { "its rules are the policy's '\($0):' settings" } ?? "its rules are built in"
                throw fail(entries[other]!.key, "'\(other)' does not fit the built-in field '\(name)': \(rulesAt) (it may have: \(allowed.joined(separator: ", ")))")
            }
            if let kind = entries["kind"], try string(kind.value, "\(path).kind") != name {
                throw fail(kind.value, "the built-in field '\(name)' has kind '\(name)'; leave 'kind' out")
            }
            var declaration = FieldDeclaration(name: name, kind: builtIn)
            try readFieldTexts(entries, into: &declaration, path: path)
            return declaration
        }
        guard let kindEntry = entries["kind"] else {
            throw fail(node, "field '\(name)' needs a 'kind': \(FieldDeclaration.Kind.declarable.map(\.rawValue).joined(separator: ", "))")
        }
        let kindName = try string(kindEntry.value, "\(path).kind")
        guard let kind = FieldDeclaration.Kind(rawValue: kindName), !kind.isBuiltIn else {
            throw fail(kindEntry.value, "unknown kind '\(kindName)' for field '\(name)'; a field may be \(FieldDeclaration.Kind.declarable.map(\.rawValue).joined(separator: ", "))")
        }
        var declaration = FieldDeclaration(name: name, kind: kind)
        // Which requirements fit which kind: a setting that would silently do nothing is refused.
        let fits: [FieldDeclaration.Kind: Set<String>] = [
            .text: ["required", "min_length", "max_length", "pattern"],
            .checkbox: ["accepted", "link_url"],
            .select: ["required", "options"],
        ]
        for key in ["required", "min_length", "max_length", "pattern", "accepted", "options", "link_url"] {
            if let entry = entries[key], !(fits[kind]?.contains(key) ?? false) {
                let hint = key == "required" && kind == .checkbox ? " (a box that must be ticked uses 'accepted: true')" : ""
                throw fail(entry.key, "'\(key)' does not fit a \(kind.rawValue) field ('\(name)')\(hint); a \(kind.rawValue) field may have: \(fits[kind]!.sorted().joined(separator: ", "))")
            }
        }
        if let entry = entries["autocomplete"] {
            let token = try string(entry.value, "\(path).autocomplete")
            guard token.wholeMatch(of: #/[a-z0-9 -]{1,64}/#) != nil else {
                throw fail(entry.value, "'\(path).autocomplete' must be an autocomplete token such as nickname, organization or off")
            }
            declaration.autocomplete = token
        }
        if let entry = entries["required"] { declaration.isRequired = try boolean(entry.value, "\(path).required") }
        if let entry = entries["accepted"] { declaration.mustBeAccepted = try boolean(entry.value, "\(path).accepted") }
        if let entry = entries["stored"] { declaration.isStored = try boolean(entry.value, "\(path).stored") }
        if let entry = entries["min_length"] {
            declaration.minimumLength = try integer(entry.value, "\(path).min_length", in: 0...DeclaredFieldRules.longestText)
        }
        if let entry = entries["max_length"] {
            declaration.maximumLength = try integer(entry.value, "\(path).max_length", in: 1...DeclaredFieldRules.longestText)
        }
        if let minimum = declaration.minimumLength, let maximum = declaration.maximumLength, minimum > maximum {
            throw fail(entries["max_length"]!.value, "'\(path).max_length' (\(maximum)) is below '\(path).min_length' (\(minimum))")
        }
        if let entry = entries["pattern"] {
            let pattern = try string(entry.value, "\(path).pattern")
            if let problem = DeclaredFieldRules.patternProblem(pattern) {
                throw fail(entry.value, "'\(path).pattern' does not compile as a regular expression: \(problem)")
            }
            declaration.pattern = pattern
        }
        if let entry = entries["options"] {
            let options = try strings(entry.value, "\(path).options")
            guard !options.isEmpty else { throw fail(entry.value, "'\(path).options' is empty: list the values to choose from") }
            if let duplicate = Dictionary(grouping: options, by: { $0 }).first(where: { $0.value.count > 1 })?.key {
                throw fail(entry.value, "'\(path).options' lists '\(duplicate)' twice")
            }
            if let bad = options.first(where: { $0.wholeMatch(of: #/[A-Za-z0-9_.-]{1,64}/#) == nil }) {
                throw fail(entry.value, "option '\(bad)' of '\(path)' must be 1 to 64 letters, digits, '.', '-' or '_' (it is the value posted; its label is the text 'option.\(bad)')")
            }
            declaration.options = options
        } else if kind == .select {
            throw fail(node, "the select field '\(name)' needs 'options': the values to choose from")
        }
        if let entry = entries["link_url"] {
            let url = try string(entry.value, "\(path).link_url")
            guard url.hasPrefix("https://") || url.hasPrefix("http://") || (url.hasPrefix("/") && !url.hasPrefix("//")),
                  !url.contains(where: { $0.isWhitespace || $0 == "\"" || $0 == "<" || $0 == ">" }) else {
                throw fail(entry.value, "'\(path).link_url' must be an http(s) address or a path on this site starting with '/'")
            }
            declaration.linkURL = url
        }
        try readFieldTexts(entries, into: &declaration, path: path)
        guard declaration.texts["label"] != nil else {
            throw fail(node, "field '\(name)' needs a 'label' (the words next to it)")
        }
        if declaration.pattern != nil {
            for key in ["pattern.text", "pattern.message"] where declaration.texts[key] == nil {
                throw fail(entries["pattern"]!.key, "field '\(name)' has a pattern, so its 'texts' must say what it asks for: give '\(key)' (a pattern has no words of its own)")
            }
        }
        if let url = declaration.linkURL {
            for (language, texts) in [(nil, declaration.texts)] + declaration.textsByLanguage.map({ ($0.key, $0.value) }) {
                if let label = texts["label"], DeclaredFieldRules.linkedWords(in: label) == nil {
                    throw fail(entries["link_url"]!.key, "field '\(name)' links to \(url), so its label\(language.map { " in '\($0)'" } ?? "") must put the linked words in [brackets], like \"I accept the [terms of service]\"")
                }
            }
        }
        return declaration
    }

    /// `label:`, `hint:`, `texts:` and `texts_by_language:` of a field.
    private func readFieldTexts(_ entries: [String: (key: Node, value: Node)], into declaration: inout FieldDeclaration,
                                path: String) throws(PolicyFileError) {
        let keys = declaration.textKeys
        var general: [String: String] = [:]
        if let texts = entries["texts"] { general = try fieldTexts(texts.value, at: "\(path).texts", known: keys) }
        for key in ["label", "hint"] {
            if let entry = entries[key] {
                guard general[key] == nil else { throw fail(entry.key, "'\(path).\(key)' is given twice (also in its texts)") }
                general[key] = try fieldText(entry.value, at: "\(path).\(key)", key: key)
            }
        }
        declaration.texts = general
        if let byLanguage = entries["texts_by_language"] {
            for entry in try languages(byLanguage.value, at: "\(path).texts_by_language") {
                declaration.textsByLanguage[entry.tag] = try fieldTexts(entry.value, at: "\(path).texts_by_language.\(entry.tag)", known: keys)
            }
        }
    }

    private func fieldTexts(_ node: Node, at path: String, known: [String]) throws(PolicyFileError) -> [String: String] {
        let entries = try settings(node, at: path, known: known)
        var texts: [String: String] = [:]
        for (key, entry) in entries { texts[key] = try fieldText(entry.value, at: "\(path).\(key)", key: key) }
        return texts
    }

    private func fieldText(_ node: Node, at path: String, key: String) throws(PolicyFileError) -> String {
        let value = try string(node, path)
        guard !value.trimmingCharacters(in: .whitespaces).isEmpty else { throw fail(node, "'\(path)' is empty") }
        let allowed = DeclaredFieldRules.placeholders(for: key)
        if let unknown = PolicyTexts.placeholders(in: value).first(where: { !allowed.contains($0) }) {
            throw fail(node, "'\(path)' uses {\(unknown)}, which it cannot fill in; \(allowed.isEmpty ? "it takes no placeholders" : "it may use \(allowed.sorted().map { "{\($0)}" }.joined(separator: ", "))")")
        }
        return value
    }

    private func readTexts(_ node: Node, at path: String) throws(PolicyFileError) -> PolicyTexts {
        let known = PolicyText.allCases.map(\.rawValue)
        let entries = try settings(node, at: path, known: known)
        var replaced: [PolicyText: String] = [:]
        for (name, entry) in entries {
            guard let text = PolicyText(rawValue: name) else { continue }
            let value = try string(entry.value, "\(path).\(name)")
            guard !value.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw fail(entry.value, "'\(path).\(name)' is empty; leave it out to keep the built-in text")
            }
            let unknown = PolicyTexts.unknownPlaceholders(in: value, for: text)
            if let first = unknown.first {
                let allowed = text.placeholders.sorted().map { "{\($0)}" }
                throw fail(entry.value, "'\(path).\(name)' uses {\(first)}, which it cannot fill in; \(allowed.isEmpty ? "it takes no placeholders" : "it may use \(allowed.joined(separator: ", "))")")
            }
            replaced[text] = value
        }
        return PolicyTexts(replaced)
    }
}
