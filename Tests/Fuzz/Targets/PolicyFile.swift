import Foundation
import SignupDomain

/// An empty folder: list files a fuzzed policy names relatively are looked for here and not
/// found. (An absolute path is read as the server reads it: regular files under 64 MiB only.)
private let emptyFolder: URL = {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-fuzz-policy-\(getpid())")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}()

extension FuzzTarget {
    /// The policy file (YAML, or JSON which YAML reads), as `--policy` and `config check` read it.
    static let policyFile = FuzzTarget(
        name: "policy-file",
        summary: "policy files (YAML and JSON): PolicyFile.parse"
    ) { input in
        do throws(PolicyFileError) {
            let policy = try PolicyFile.parse(input.text, file: "fuzz.yaml", baseDirectory: emptyFolder)
            // An accepted policy makes a form: every rule it declares can be evaluated.
            let form = FormPolicy(policy)
            _ = form.initialEvaluation
            // What the file declares, the form enforces: every pattern is a rule.
            for field in policy.fields where field.pattern != nil {
                fuzzCheck(form.allRequirements.contains { $0.id == "\(field.name).pattern" },
                          "the pattern of field \(field.name) was accepted and then left out")
            }
        } catch {
            // Refused with a place and a reason an operator can act on.
            fuzzCheck(!error.description.isEmpty, "a policy refused without a reason")
        }
    }
}
