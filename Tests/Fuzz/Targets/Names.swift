import SignupDomain
import UsernameSafety

private let checker = UsernameSafetyChecker()
private let suggester = EmailDomainSuggester.builtIn
private let disposable = DisposableEmailDomains(["mailinator.com", "guerrillamail.com"])
private let characters = FormPolicy(.classic).settings.usernameCharacters

extension FuzzTarget {
    /// The address field: its shape, its domain, the "did you mean" suggestion.
    static let mailAddress = FuzzTarget(
        name: "mail-address",
        summary: "mail addresses: EmailAddress.isValid, canonical, domain(of:), suggestion, disposable domains"
    ) { input in
        let address = input.text
        if EmailAddress.isValid(address) {
            let bytes = Array(address.utf8)
            fuzzCheck(bytes.allSatisfy { $0 < 0x80 } && bytes.count <= EmailAddress.maximumLength, "a valid address that is not short ASCII")
            fuzzCheck(EmailAddress.isValid(EmailAddress.canonical(address)), "an address invalid once made canonical")
        }
        let canonical = EmailAddress.canonical(address)
        fuzzCheck(EmailAddress.canonical(canonical) == canonical, "canonical twice is not canonical once")
        if let suggestion = suggester.suggestion(for: address) {
            fuzzCheck(suggestion != address && EmailAddress.isValid(suggestion), "a suggestion that is the address or not an address")
            fuzzCheck(suggester.suggestion(for: suggestion) == nil, "a suggestion that would be corrected again")
        }
        if let domain = EmailAddress.domain(of: address), disposable.contains(domain: domain) {
            fuzzCheck(disposable.contains(domain: "mail." + domain), "a subdomain of a disposable domain is not disposable")
        }
    }

    /// The username field: the characters allowed, the safety checks (ICU's spoof checker,
    /// bidi controls, invisibles), and the form names are compared in.
    static let username = FuzzTarget(
        name: "username",
        summary: "usernames: UsernameSafetyChecker.problem, UsernameCharacters.allows, Username.canonical"
    ) { input in
        let name = input.text
        let problem = checker.problem(in: name)
        _ = characters.allows(name)
        // Plain ASCII is what the fast path says it is: nothing ICU would refuse.
        if name.utf8.allSatisfy({ $0 < 0x80 }) {
            fuzzCheck(checker.icuProblem(in: name) == nil, "ICU refuses an ASCII name the fast path lets through: \(name)")
        }
        // A name holding an unsafe part is unsafe: what follows a NUL is judged too.
        if let nul = name.unicodeScalars.firstIndex(of: "\u{0}") {
            let after = String(name.unicodeScalars[name.unicodeScalars.index(after: nul)...])
            if checker.problem(in: after) != nil {
                fuzzCheck(problem != nil, "an unsafe name passed because a NUL hid its unsafe part: \(Array(name.utf8))")
            }
        }
        let canonical = Username.canonical(name)
        fuzzCheck(Username.canonical(canonical) == canonical, "canonical twice is not canonical once: \(Array(name.utf8))")
    }
}
