import Foundation

/// Words a password must not be based on: the person's username, the parts of their email
/// address and the site's name. Attackers who target one account try these first.
public struct ContextWords: Sendable, Hashable {
    /// Folded (NFKC, case folded), at least 3 characters, no duplicates, in a stable order.
    public let words: [String]
    /// The site's own words, folded: its name and the policy's `context_words`. A password
    /// built on one of them gets the "based on this site's name" message.
    public let siteWords: [String]

    public init(username: String, email: String, serviceName: String, siteWords extraSiteWords: [String] = []) {
        var words: [String] = []
        func add(_ word: Substring) {
            let folded = Self.fold(String(word))
            if folded.count >= 3, !words.contains(folded) { words.append(folded) }
        }
        add(Substring(username))
        username.split(whereSeparator: { ".-_".contains($0) }).forEach(add)
        if let at = email.lastIndex(of: "@") {
            let local = email[..<at]
            let domain = email[email.index(after: at)...]
            add(local)
            local.split(whereSeparator: { ".-_+".contains($0) }).forEach(add)
            // Every label but the top-level one ("example" of "mail.example.com").
            domain.split(separator: ".").dropLast().forEach(add)
        } else {
            add(Substring(email))
        }
        let site = [serviceName] + extraSiteWords
        siteWords = site.map(Self.fold)
        site.forEach { add(Substring($0)) }
        self.words = words
    }

    /// Every word, the site's name included: what the strength estimator gets as user inputs.
    public var all: [String] { words }

    /// The same folding as usernames' canonical form, so "ALICE" and "Ａｌｉｃｅ" are one word.
    static func fold(_ text: String) -> String {
        Username.canonical(text)
    }

    /// The context word `password` is built from, if any: the word (once or repeated) with
    /// only digits, symbols or spaces around it, letters possibly swapped for look-alike
    /// digits and symbols ("Alice2024!", "4l1ce", "alicealice", "LiveSignup1").
    public func word(underlying password: String) -> String? {
        let folded = Array(Self.fold(password))
        return words.first { Self.isBuilt(folded, from: Array($0)) }
    }

    private static func isBuilt(_ password: [Character], from word: [Character]) -> Bool {
        guard !word.isEmpty else { return false }
        // The word may start anywhere in the letter-free prefix (a digit there may be a
        // disguised letter of the word); it then repeats once or more, and what follows the
        // last repeat must hold no letters either.
        for start in password.indices {
            var end = start
            while end + word.count <= password.count,
                  zip(password[end..<(end + word.count)], word).allSatisfy(matches) {
                end += word.count
                if password[end...].allSatisfy({ !$0.isLetter }) { return true }
                // "alice-alice": separators may sit between repeats.
                while end < password.count, !password[end].isLetter, !matches((password[end], word[0])) {
                    end += 1
                }
            }
            if password[start].isLetter { return false }  // a letter outside the word
        }
        return false
    }

    /// Substitutions people use to "disguise" a word.
    private static let lookAlikes: [Character: Set<Character>] = [
        "0": ["o"], "1": ["i", "l"], "!": ["i", "l"], "|": ["i", "l"], "3": ["e"], "4": ["a"],
        "@": ["a"], "5": ["s"], "$": ["s"], "7": ["t"], "+": ["t"], "8": ["b"], "9": ["g"],
        "6": ["g"], "2": ["z"],
    ]

    private static func matches(_ pair: (Character, Character)) -> Bool {
        pair.0 == pair.1 || lookAlikes[pair.0]?.contains(pair.1) == true
    }
}
