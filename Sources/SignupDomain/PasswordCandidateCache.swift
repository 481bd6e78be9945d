/// Remembers the last password candidate, so an edit of the email or confirmation (or a
/// repeat of the same values) does not estimate the password's strength again. One per
/// view model; not thread-safe, like the view model.
public final class PasswordCandidateCache {
    // One view model's, used under its owner's lock or queue: no runtime exclusivity check
    // per access (see DEVELOPMENT.md, "exclusivity").
    @exclusivity(unchecked) private var last: (password: String, username: String, email: String, candidate: PasswordCandidate)?
    /// Typing the password leaves the context alone; folding its words is not free.
    @exclusivity(unchecked) private var lastContext: (username: String, email: String, context: ContextWords)?
    @exclusivity(unchecked) private var emptyCandidate: PasswordCandidate?

    public init() {}

    public func candidate(in policy: FormPolicy, password: String, username: String, email: String) -> PasswordCandidate {
        // An empty password is refused as empty whatever the other fields say, so while the
        // person types their username and email the context words are not folded per keystroke.
        if password.isEmpty {
            if let emptyCandidate { return emptyCandidate }
            let candidate = policy.passwordCandidate(password: "", context: policy.contextWords(username: "", email: ""))
            emptyCandidate = candidate
            return candidate
        }
        if let last, last.password == password, last.username == username, last.email == email {
            return last.candidate
        }
        let context: ContextWords
        if let lastContext, lastContext.username == username, lastContext.email == email {
            context = lastContext.context
        } else {
            context = policy.contextWords(username: username, email: email)
            lastContext = (username, email, context)
        }
        let candidate = policy.passwordCandidate(password: password, context: context)
        last = (password, username, email, candidate)
        return candidate
    }
}
