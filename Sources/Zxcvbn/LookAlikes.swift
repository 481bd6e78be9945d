/// Undoes the character swaps people use to disguise words ("p4ssw0rd"), to find which word
/// was meant.
enum LookAlikes {
    private static let letters: [Character: [Character]] = [
        "4": ["a"], "@": ["a"], "8": ["b"], "(": ["c"], "{": ["c"], "[": ["c"], "<": ["c"],
        "3": ["e"], "6": ["g"], "9": ["g"], "1": ["i", "l"], "!": ["i", "l"], "|": ["i", "l"],
        "0": ["o"], "$": ["s"], "5": ["s"], "+": ["t"], "7": ["t"], "%": ["x"], "2": ["z"],
    ]

    /// The word itself plus its readings with every swap undone (one reading per choice
    /// where a character can stand for two letters, e.g. "1" for "i" or "l").
    static func plainForms(of word: String) -> [String] {
        var forms: [String] = [""]
        for character in word {
            let options = letters[character] ?? [character]
            forms = forms.flatMap { form in options.map { form + String($0) } }
            if forms.count > 16 { forms = Array(forms.prefix(16)) }  // bounded for long tokens
        }
        return Array(Set([word] + forms))
    }
}
