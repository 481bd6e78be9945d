import ArgumentParser
import Foundation
import SignupDomain

/// Operator commands on policy files.
struct PolicyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Check sign-up policy files.",
        subcommands: [Check.self])

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate a policy file (or a preset's name) without starting the server; prints what it sets.")

        @Argument(help: "The policy file (YAML or JSON), or a preset's name.")
        var file: String

        func run() throws {
            let policy: Policy
            do {
                policy = try AccountOptions.loadPolicy(file)
            } catch let error as ValidationError {
                // file:line: reason, on standard error, and a failing exit status for scripts.
                FileHandle.standardError.write(Data("\(error.message)\n".utf8))
                throw ExitCode(1)
            }
            let rules = FormPolicy(policy)
            print("\(file): OK, policy '\(policy.name)'\(policy.summary.isEmpty ? "" : ": \(policy.summary)")")
            print("  username: \(policy.usernameLength.lowerBound) to \(policy.usernameLength.upperBound) characters; \(policy.reservedUsernames.count) reserved names")
            print("  password: at least \(policy.passwordMinimumLength) characters, at most \(policy.passwordMaximumBytes) bytes; uppercase \(policy.requiresUppercase ? "required" : "not required"); strength ≥ \(policy.minimumStrengthScore); blocklist \(policy.blocklistSource) (\(policy.blocklist.count) passwords)")
            let suggestions = policy.emailSuggestions.commonDomains.isEmpty
                ? "no typo suggestions" : "typos corrected towards \(policy.emailSuggestions.commonDomains.count) common domains"
            let throwaway = policy.disposableEmailDomains.map {
                "\($0.count) throwaway domains from \(policy.disposableEmailSource ?? "the policy")"
            } ?? "no throwaway list"
            print("  email: \(suggestions); \(throwaway)")
            if let debounce = policy.availabilityDebounceMilliseconds {
                print("  availability look-up after \(debounce) ms unchanged")
            }
            if !policy.textsByLanguage.isEmpty {
                let languages = policy.textsByLanguage.sorted { $0.key < $1.key }
                    .map { "\($0.key) (\($0.value.replacedTexts.count) texts)" }
                print("  own wording for: \(languages.joined(separator: ", ")); other languages get 'texts'")
            }
            print("  requirements:")
            for requirement in rules.allRequirements {
                print("    \(requirement.id): \(requirement.text)")
            }
        }
    }
}
