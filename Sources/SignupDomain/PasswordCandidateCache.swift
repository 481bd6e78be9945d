/// Remembers the last password candidate, so an edit of the email or confirmation (or a
/// repeat of the same values) does not estimate the password's strength again. One per
/// view model; not thread-safe, like the view model.
public final class PasswordCandidateCache {
    private var last: (password: String, username: String, email: String, candidate: PasswordCandidate)?

    public init() {}

    public func candidate(in policy: SignupPolicy, password: String, username: String, email: String) -> PasswordCandidate {
        if let last, last.password == password, last.username == username, last.email == email {
            return last.candidate
        }
        let candidate = policy.passwordCandidate(password: password, username: username, email: email)
        last = (password, username, email, candidate)
        return candidate
    }
}
