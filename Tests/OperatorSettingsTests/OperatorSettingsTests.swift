import Foundation
import OperatorSettings
import XCTest

/// Issue 55: one declaration per setting, and every source read against it: the file (with
/// each problem at its line), the environment (a secret's `_FILE` too), the flags, by
/// precedence, with where each value came from and no secret ever printed.
final class OperatorSettingsTests: XCTestCase {
    private let declarations = [
        SettingDeclaration(.server, "host", flag: "host", .text, default: "127.0.0.1", help: "Address to listen on."),
        SettingDeclaration(.server, "port", flag: "port", .integer(0...65535), default: "8080", help: "Port to listen on."),
        SettingDeclaration(.server, "public_origins", flag: "public-origin", .list, help: "This site's origins."),
        SettingDeclaration(.signIn, "secure_cookies", flag: "secure-cookies", .boolean, default: "false", help: "Secure cookies."),
        SettingDeclaration(.logging, "level", flag: "log-level", .choice(["debug", "info", "warning"]), default: "info",
                           help: "Log level."),
        SettingDeclaration(.proofOfWork, "level_factor", flag: "proof-level-factor", .decimal(1...100), default: "2",
                           help: "Each level multiplies the cost."),
        SettingDeclaration(.mail, "smtp_password", flag: "smtp-password", .text, help: "The mail server's password.", secret: true),
        SettingDeclaration(.policy, "rules", flag: "policy-inline", .document, help: "The policy, inline."),
    ]

    private func file(_ text: String) throws -> SettingsFile {
        try SettingsFile(path: "live.yaml", text: text, declarations: declarations)
    }

    private func problems(_ text: String) -> [String] {
        do {
            _ = try file(text)
            XCTFail("accepted:\n\(text)")
            return []
        } catch {
            return (error as? SettingProblems)?.problems.map(\.description) ?? ["\(error)"]
        }
    }

    func testAFileGivesItsValuesWithTheirLines() throws {
        let read = try file("""
            server:
              host: 0.0.0.0
              port: 9090
              public_origins:
                - https://signup.example.com
                - https://id.example.com
            sign_in:
              secure_cookies: true
            proof_of_work:
              level_factor: 2.5
            """)
        XCTAssertEqual(read.entries["server.host"], .init(value: .single("0.0.0.0"), line: 2))
        XCTAssertEqual(read.entries["server.port"], .init(value: .single("9090"), line: 3))
        XCTAssertEqual(read.entries["server.public_origins"]?.value,
                       .list(["https://signup.example.com", "https://id.example.com"]))
        XCTAssertEqual(read.entries["sign_in.secure_cookies"]?.value, .single("true"))
        XCTAssertEqual(read.entries["proof_of_work.level_factor"]?.value, .single("2.5"))
    }

    func testAFlagWinsOverTheEnvironmentWhichWinsOverTheFileWhichWinsOverTheDefault() throws {
        let read = try file("server:\n  host: 10.0.0.1\n  port: 9090\nlogging:\n  level: debug\n")
        let flags = try CommandLineSettings(["--port", "7070", "--config", "live.yaml"], declarations: declarations)
        XCTAssertEqual(flags.rest, ["--config", "live.yaml"], "what is not a setting is left for the command")
        let resolved = try SettingsResolution(declarations: declarations, file: read,
                                              environment: ["LIVESIGNUP_PORT": "6060", "LIVESIGNUP_LOG_LEVEL": "warning"],
                                              flags: flags.values)
        XCTAssertEqual(resolved["server.port"]?.value, .single("7070"))
        XCTAssertEqual(resolved["server.port"]?.source, .flag("port"))
        XCTAssertEqual(resolved["logging.level"]?.value, .single("warning"))
        XCTAssertEqual(resolved["logging.level"]?.source, .environment(variable: "LIVESIGNUP_LOG_LEVEL"))
        XCTAssertEqual(resolved["server.host"]?.value, .single("10.0.0.1"))
        XCTAssertEqual(resolved["server.host"]?.source, .file(path: "live.yaml", line: 2))
        XCTAssertEqual(resolved["proof_of_work.level_factor"]?.value, .single("2"))
        XCTAssertEqual(resolved["proof_of_work.level_factor"]?.source, .defaultValue)
        XCTAssertEqual(resolved["server.public_origins"]?.value, nil, "a list with no default is unset")
        // The command's own parser gets what the file and the environment gave, as flags.
        XCTAssertEqual(resolved.arguments, ["--host=10.0.0.1", "--log-level=warning"])
    }

    func testAnUnknownKeyIsRefusedAtItsLineWithTheClosestKnownKey() {
        XCTAssertEqual(problems("server:\n  hots: 0.0.0.0\n"), ["live.yaml:2: server.hots: unknown setting; did you mean host?"])
        XCTAssertEqual(problems("\nsevrer:\n  host: x\n"), ["live.yaml:2: sevrer: unknown section; did you mean server?"])
        XCTAssertEqual(problems("server:\n  level_factor: 3\n"),
                       ["live.yaml:2: server.level_factor: unknown setting; did you mean proof_of_work.level_factor?"],
                       "a key in the wrong section names the section it belongs to")
        XCTAssertEqual(problems("server:\n  completely_else: 1\n"), ["live.yaml:2: server.completely_else: unknown setting"])
    }

    func testWrongTypesOutOfBoundsValuesAndDuplicatesAreRefusedAtTheirLines() {
        XCTAssertEqual(problems("server:\n  port: eighty\n"), ["live.yaml:2: server.port: a whole number, not 'eighty'"])
        XCTAssertEqual(problems("server:\n  port: 70000\n"), ["live.yaml:2: server.port: 70000 is out of bounds: 0 to 65535"])
        XCTAssertEqual(problems("proof_of_work:\n  level_factor: 0.5\n"),
                       ["live.yaml:2: proof_of_work.level_factor: 0.5 is out of bounds: 1 to 100"])
        XCTAssertEqual(problems("sign_in:\n  secure_cookies: maybe\n"),
                       ["live.yaml:2: sign_in.secure_cookies: true or false, not 'maybe'"])
        XCTAssertEqual(problems("logging:\n  level: loud\n"),
                       ["live.yaml:2: logging.level: 'loud' is not one of: debug, info, warning"])
        XCTAssertEqual(problems("server:\n  host: [a, b]\n"), ["live.yaml:2: server.host: one value, not a list"])
        XCTAssertEqual(problems("server:\n  port: 1\n  host: a\n  port: 2\n"),
                       ["live.yaml:2: port: is given more than once in one mapping"])
        XCTAssertEqual(problems("server: [1, 2]\n"), ["live.yaml:1: server: a section is a mapping of its settings"])
        XCTAssertEqual(problems("server:\n  host: [unclosed\n").first?.hasPrefix("live.yaml:"), true)
    }

    func testEveryProblemOfAFileIsReportedAtOnce() {
        XCTAssertEqual(problems("server:\n  port: x\n  hots: y\nlogging:\n  level: loud\n").count, 3)
    }

    func testASecretIsNeverInlineAndComesFromAFileOrTheEnvironment() throws {
        XCTAssertEqual(problems("mail:\n  smtp_password: hunter2\n"),
                       ["live.yaml:2: mail.smtp_password: a secret is never written in the file: put it in a file of its own and name that file with smtp_password_file, or set LIVESIGNUP_SMTP_PASSWORD or LIVESIGNUP_SMTP_PASSWORD_FILE"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secretFile = directory.appendingPathComponent("smtp").path
        try "correct horse\n".write(toFile: secretFile, atomically: true, encoding: .utf8)

        let fromFileKey = try SettingsResolution(declarations: declarations,
                                                 file: file("mail:\n  smtp_password_file: \(secretFile)\n"), environment: [:])
        XCTAssertEqual(fromFileKey["mail.smtp_password"]?.value, .single("correct horse"), "the file's line end is not the secret's")
        let fromVariable = try SettingsResolution(declarations: declarations, file: nil,
                                                  environment: ["LIVESIGNUP_SMTP_PASSWORD_FILE": secretFile])
        XCTAssertEqual(fromVariable["mail.smtp_password"]?.value, .single("correct horse"))
        XCTAssertEqual(fromVariable["mail.smtp_password"]?.source, .environment(variable: "LIVESIGNUP_SMTP_PASSWORD_FILE"))
        XCTAssertFalse(fromVariable.printout.contains("correct horse"), fromVariable.printout)
        XCTAssertTrue(fromVariable.printout.contains("smtp_password: (set, redacted)"), fromVariable.printout)
        XCTAssertEqual(fromVariable.arguments, [], "a secret is never an argument (ps shows arguments)")
        XCTAssertNil(try CommandLineSettings(["--smtp-password", "x"], declarations: declarations).values["smtp-password"],
                     "a secret has no flag")

        XCTAssertThrowsError(try SettingsResolution(declarations: declarations, file: nil, environment: [
            "LIVESIGNUP_SMTP_PASSWORD": "a", "LIVESIGNUP_SMTP_PASSWORD_FILE": secretFile,
        ])) { error in
            XCTAssertEqual((error as? SettingProblems)?.description,
                           "LIVESIGNUP_SMTP_PASSWORD: set together with LIVESIGNUP_SMTP_PASSWORD_FILE; set one")
        }
        XCTAssertThrowsError(try SettingsResolution(declarations: declarations, file: nil, environment: [
            "LIVESIGNUP_SMTP_PASSWORD_FILE": directory.appendingPathComponent("missing").path,
        ])) { error in
            XCTAssertTrue((error as? SettingProblems)?.description.hasPrefix("LIVESIGNUP_SMTP_PASSWORD_FILE: the file") == true)
        }
    }

    func testTheEnvironmentIsCheckedLikeTheFile() {
        XCTAssertThrowsError(try SettingsResolution(declarations: declarations, file: nil,
                                                    environment: ["LIVESIGNUP_PORT": "70000"])) { error in
            XCTAssertEqual((error as? SettingProblems)?.description, "LIVESIGNUP_PORT: 70000 is out of bounds: 0 to 65535")
        }
    }

    func testThePolicyMayBeWrittenInline() throws {
        let read = try file("policy:\n  rules:\n    fields:\n      username:\n        min_length: 3\n")
        let text = try XCTUnwrap(read.entries["policy.rules"]?.value.text)
        XCTAssertTrue(text.contains("min_length: 3"), text)
    }

    func testTheGeneratedExampleIsAcceptedAndResolvesToTheDefaults() throws {
        let example = SettingsDocuments.example(declarations, header: "An example.")
        let read = try SettingsFile(path: "example.yaml", text: example, declarations: declarations)
        let resolved = try SettingsResolution(declarations: declarations, file: read, environment: [:])
        for setting in resolved.settings where !setting.declaration.secret {
            let expected = setting.declaration.defaultText.map {
                setting.declaration.kind.summary == "list" ? SettingValue.list([$0]) : .single($0)
            }
            XCTAssertEqual(setting.value, expected, setting.declaration.path)
        }
        let reference = SettingsDocuments.reference(declarations, title: "Configuration", introduction: "Every setting.")
        for declaration in declarations {
            XCTAssertTrue(reference.contains("`\(declaration.fileKey)`"), declaration.path)
            if declaration.fileOnly {
                XCTAssertFalse(reference.contains(declaration.environmentVariable), "a mapping has no variable: \(declaration.path)")
            } else {
                XCTAssertTrue(reference.contains(declaration.environmentVariable), declaration.path)
            }
        }
    }
}
