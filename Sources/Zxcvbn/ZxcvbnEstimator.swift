import CZxcvbn
import Foundation

/// zxcvbn password strength estimation through zxcvbn-c (Debian's libzxcvbn, dictionaries
/// compiled in). zxcvbn looks for the patterns attackers try first (common passwords,
/// words, names, keyboard walks, repeats, sequences, dates, the person's own details) and
/// estimates the guesses needed, instead of rating character variety.
///
/// Safe to use from any thread: zxcvbn-c keeps no mutable global state (its dictionaries
/// are read-only data) and allocates each call's results separately.
public struct ZxcvbnEstimator: Sendable {
    /// The feedback's word lists are loaded here, not by the first password that needs them.
    public init() {
        WordLists.prepare()
    }

    /// - Parameters:
    ///   - userInputs: words the person's own details give away (username, email parts, the
    ///     site's name); parts of the password built from them count as easy to guess.
    public func estimate(_ password: String, userInputs: [String] = []) -> PasswordEstimate {
        let password = Self.analysedPart(of: password)
        let bytes = Array(password.utf8)
        var info: UnsafeMutablePointer<ZxcMatch_t>?
        let bits = Self.withCStrings(userInputs.map { $0.lowercased() }) { dictionary in
            password.withCString { ZxcvbnMatch($0, dictionary, &info) }
        }
        defer { ZxcvbnFreeInfo(info) }

        var matches: [PasswordMatch] = []
        var next = info
        while let match = next?.pointee {
            let type = Int(match.Type.rawValue)
            let start = min(max(Int(match.Begin), 0), bytes.count)
            let end = min(start + max(Int(match.Length), 0), bytes.count)
            matches.append(PasswordMatch(
                kind: Self.kind(type & ~Int(MULTIPLE_MATCH.rawValue)),
                // Offsets are in UTF-8 bytes; decoding repairs a cut inside a character.
                token: String(decoding: bytes[start..<end], as: UTF8.self),
                isRepeatedPart: type & Int(MULTIPLE_MATCH.rawValue) != 0,
                guessesLog10: match.Entrpy * log10(2)))
            next = match.Next
        }
        let guessesLog10 = max(0, bits) * log10(2)
        let score = PasswordEstimate.score(guessesLog10: guessesLog10)
        return PasswordEstimate(
            guessesLog10: guessesLog10, matches: matches,
            feedback: FeedbackWriter.feedback(for: matches, score: score, isEmpty: password.isEmpty))
    }

    /// zxcvbn-c's work grows steeply with length: a crafted 100-byte password ("e3" × 50)
    /// takes ~48 ms, 64 bytes ~9 ms. Only the first 64 bytes (whole characters) are analysed:
    /// more characters can only add strength, and 64 bytes of a real passphrase already score 4.
    public static let analysedBytes = 64

    static func analysedPart(of password: String) -> String {
        guard password.utf8.count > analysedBytes else { return password }
        var prefix = ""
        var count = 0
        for character in password {
            count += character.utf8.count
            if count > analysedBytes { break }
            prefix.append(character)
        }
        return prefix
    }

    private static func kind(_ type: Int) -> PasswordMatch.Kind {
        switch type {
        case Int(BRUTE_MATCH.rawValue): return .bruteForce
        case Int(DICTIONARY_MATCH.rawValue): return .dictionaryWord
        case Int(DICT_LEET_MATCH.rawValue): return .substitutedDictionaryWord
        case Int(USER_MATCH.rawValue): return .userInput
        case Int(USER_LEET_MATCH.rawValue): return .substitutedUserInput
        case Int(REPEATS_MATCH.rawValue): return .repeated
        case Int(SEQUENCE_MATCH.rawValue): return .sequence
        case Int(SPATIAL_MATCH.rawValue): return .keyboardPattern
        case Int(DATE_MATCH.rawValue): return .date
        case Int(YEAR_MATCH.rawValue): return .year
        case Int(LONG_PWD_MATCH.rawValue): return .longPassword
        default: return .other(type)
        }
    }

    /// A NULL-terminated array of C strings, alive for the duration of `body`.
    private static func withCStrings<Result>(
        _ strings: [String], _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> Result
    ) -> Result {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        var pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } } + [nil]
        return pointers.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
    }
}
