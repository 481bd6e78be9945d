/// Turns zxcvbn's matches into advice a person can act on. Only weak passwords (score 2 or
/// less) get feedback, and it is about the longest part, the one that weakens the password
/// most. Our own wording, following the kinds of advice zxcvbn gives: each piece is a text
/// key (`advice.*`), which a catalog says in each language (SignupDomain's en.yaml holds the
/// English); no sentence lives in code.
enum FeedbackWriter {
    static let addWords = "advice.add_words"

    static func feedback(for matches: [PasswordMatch], score: Int, isEmpty: Bool) -> PasswordFeedback {
        if isEmpty {
            return PasswordFeedback(warning: "", suggestions: [
                "advice.use_words",
                "advice.no_symbols_needed",
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
            return ("advice.own_details",
                    ["advice.leave_out_own_words"])
        case .repeated:
            let isSingleCharacter = Set(match.token).count == 1
            return (isSingleCharacter
                        ? "advice.repeated_characters"
                        : "advice.repeated_group",
                    ["advice.avoid_repeats"])
        case .sequence:
            return ("advice.runs", ["advice.avoid_runs"])
        case .keyboardPattern:
            return ("advice.keyboard",
                    ["advice.avoid_keyboard"])
        case .date, .year:
            return ("advice.dates", ["advice.avoid_dates"])
        case .bruteForce, .longPassword, .other:
            return ("", [])
        }
    }

    private static func wordAdvice(for match: PasswordMatch, isSoleMatch: Bool) -> (String, [String]) {
        let isSubstituted = match.kind == .substitutedDictionaryWord
        var suggestions: [String] = []
        let token = match.token
        if let first = token.first, first.isUppercase, token.dropFirst().allSatisfy({ !$0.isUppercase }) {
            suggestions.append("advice.capital_first")
        } else if token.count > 1, token.allSatisfy({ !$0.isLowercase }), token.contains(where: \.isUppercase) {
            suggestions.append("advice.all_capitals")
        }
        if isSubstituted {
            suggestions.append("advice.look_alikes")
        }

        let plain = LookAlikes.plainForms(of: token.lowercased())
        let warning: String
        if let rank = plain.compactMap({ WordLists.passwordRanks[$0] }).min() {
            if !isSoleMatch || isSubstituted {
                warning = "advice.close_to_common"
            } else if rank <= 10 {
                warning = "advice.top_10"
            } else if rank <= 100 {
                warning = "advice.top_100"
            } else {
                warning = "advice.very_common"
            }
        } else if plain.contains(where: WordLists.names.contains) {
            warning = isSoleMatch ? "advice.name_alone" : "advice.common_names"
        } else {
            warning = isSoleMatch ? "advice.single_word" : ""
        }
        return (warning, suggestions)
    }
}
