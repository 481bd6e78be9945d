/// Turns zxcvbn's matches into advice a person can act on. Only weak passwords (score 2 or
/// less) get feedback, and it is about the longest part, the one that weakens the password
/// most. Our own wording, following the kinds of advice zxcvbn gives.
enum FeedbackWriter {
    static let addWords = "Add another word or two; unusual words are better"

    static func feedback(for matches: [PasswordMatch], score: Int, isEmpty: Bool) -> PasswordFeedback {
        if isEmpty {
            return PasswordFeedback(warning: "", suggestions: [
                "Use a few words together and avoid well-known phrases",
                "Symbols, digits and capitals are not required",
            ])
        }
        guard score <= 2 else { return .none }
        // Brute-forced characters are not a pattern worth pointing out.
        let patterns = matches.filter { $0.kind != .bruteForce && $0.kind != .longPassword }
        guard let longest = patterns.max(by: { $0.token.count < $1.token.count }) else {
            return PasswordFeedback(warning: "", suggestions: [addWords])
        }
        let isSoleMatch = matches.count == 1
        let (warning, extra) = advice(for: longest, isSoleMatch: isSoleMatch)
        return PasswordFeedback(warning: warning, suggestions: [addWords] + extra)
    }

    private static func advice(for match: PasswordMatch, isSoleMatch: Bool) -> (String, [String]) {
        switch match.kind {
        case .dictionaryWord, .substitutedDictionaryWord:
            return wordAdvice(for: match, isSoleMatch: isSoleMatch)
        case .userInput, .substitutedUserInput:
            return ("This is based on your own details, such as your username or email",
                    ["Leave out words from your username, email address or this site's name"])
        case .repeated:
            let isSingleCharacter = Set(match.token).count == 1
            return (isSingleCharacter
                        ? "Repeated characters such as \"aaa\" are easy to guess"
                        : "Repeating a group such as \"abcabc\" is barely harder to guess than \"abc\"",
                    ["Avoid repeated words and characters"])
        case .sequence:
            return ("Runs such as \"abcd\" or \"9876\" are easy to guess", ["Avoid runs of letters or digits"])
        case .keyboardPattern:
            return ("Neighbouring keys such as \"qwerty\" are easy to guess",
                    ["Avoid keyboard patterns, or use a long one with many turns"])
        case .date, .year:
            return ("Dates and years are easy to guess", ["Avoid dates and years that are connected to you"])
        case .bruteForce, .longPassword, .other:
            return ("", [])
        }
    }

    private static func wordAdvice(for match: PasswordMatch, isSoleMatch: Bool) -> (String, [String]) {
        let isSubstituted = match.kind == .substitutedDictionaryWord
        var suggestions: [String] = []
        let token = match.token
        if let first = token.first, first.isUppercase, token.dropFirst().allSatisfy({ !$0.isUppercase }) {
            suggestions.append("A capital first letter adds little")
        } else if token.count > 1, token.allSatisfy({ !$0.isLowercase }), token.contains(where: \.isUppercase) {
            suggestions.append("All capitals are barely harder to guess than all lower case")
        }
        if isSubstituted {
            suggestions.append("Look-alike swaps such as \"@\" for \"a\" add little")
        }

        let plain = LookAlikes.plainForms(of: token.lowercased())
        let warning: String
        if let rank = plain.compactMap({ WordLists.passwordRanks[$0] }).min() {
            if !isSoleMatch || isSubstituted {
                warning = "This is close to a commonly used password"
            } else if rank <= 10 {
                warning = "This is one of the 10 most used passwords"
            } else if rank <= 100 {
                warning = "This is one of the 100 most used passwords"
            } else {
                warning = "This is a very commonly used password"
            }
        } else if plain.contains(where: WordLists.names.contains) {
            warning = isSoleMatch ? "A name on its own is easy to guess" : "Common names and surnames are easy to guess"
        } else {
            warning = isSoleMatch ? "A single word on its own is easy to guess" : ""
        }
        return (warning, suggestions)
    }
}
