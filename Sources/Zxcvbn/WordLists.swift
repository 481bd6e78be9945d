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

    private static func load(_ name: String) -> [String] {
        guard let url = Bundle.module.url(forResource: name, withExtension: "txt"),
              let text = try? String(contentsOf: url, encoding: .utf8) else {
            // The lists ship inside this module; without them the build itself is broken.
            preconditionFailure("Zxcvbn's \(name).txt resource is missing")
        }
        return text.split(separator: "\n").map(String.init)
    }
}
