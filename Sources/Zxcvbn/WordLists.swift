import Foundation

/// Word lists from zxcvbn's frequency lists (MIT, see Resources/LICENSE-zxcvbn.txt), loaded
/// once. zxcvbn-c merges its dictionaries into one, so these tell feedback which kind of
/// word matched.
public enum WordLists {
    /// The 30,000 most used passwords of public breaches, most used first, lower case.
    public static let commonPasswords: [String] = load("passwords")

    /// First names and surnames, lower case.
    public static let names: Set<String> = Set(load("names"))

    /// Rank (1 = most used) of each common password.
    static let passwordRanks: [String: Int] = Dictionary(
        commonPasswords.enumerated().map { ($1, $0 + 1) }, uniquingKeysWith: { first, _ in first })

    /// Loads every list now. Each loads on first use otherwise, and the feedback for a
    /// password made of a name or a common password is that use: the first person to type
    /// one waited while some 75 million instructions read and indexed 40,000 words (about
    /// 30 ms). `ZxcvbnEstimator.init` calls this, so a server pays it while it starts.
    public static func prepare() {
        _ = names
        _ = passwordRanks
    }

    private static func load(_ name: String) -> [String] {
        guard let url = Bundle.module.url(forResource: name, withExtension: "txt"),
              let data = try? Data(contentsOf: url) else {
            // The lists ship inside this module; without them the build itself is broken.
            preconditionFailure("Zxcvbn's \(name).txt resource is missing")
        }
        // Split on the byte, not the Character: the lists are one ASCII word a line, and
        // splitting a String runs grapheme breaking over every character of 300 KB.
        return data.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
    }
}
