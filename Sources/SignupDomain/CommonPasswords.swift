/// A blocklist of passwords that are too common to use, compared whole and case-folded.
public struct CommonPasswords: Sendable {
    private let folded: Set<String>

    public init<S: Sequence>(_ passwords: S) where S.Element == String {
        folded = Set(passwords.map { $0.lowercased() })
    }

    public func contains(_ password: String) -> Bool {
        folded.contains(password.lowercased())
    }

    public var count: Int { folded.count }

    /// A short list of the most used passwords from public breach statistics.
    public static let builtIn = CommonPasswords([
        "123456", "123456789", "12345678", "password", "qwerty", "123123", "12345", "1234567890",
        "111111", "1234567", "qwerty123", "000000", "1q2w3e", "aa12345678", "abc123", "password1",
        "1234", "qwertyuiop", "123321", "password123", "1q2w3e4r5t", "iloveyou", "654321", "666666",
        "987654321", "123", "123456a", "qwe123", "1q2w3e4r", "7777777", "1qaz2wsx", "123qwe",
        "zxcvbnm", "121212", "asdasd", "a123456", "555555", "dragon", "112233", "123123123",
        "monkey", "11111111", "qazwsx", "159753", "asdfghjkl", "222222", "1234qwer", "qwerty1",
        "123654", "123abc", "asdfgh", "777777", "aaaaaa", "myspace1", "88888888", "fuckyou",
        "123456789a", "999999", "888888", "football", "princess", "sunshine", "welcome", "shadow",
        "superman", "michael", "ninja", "mustang", "jessica", "charlie", "ashley", "bailey",
        "passw0rd", "master", "letmein", "trustno1", "baseball", "hello123", "freedom", "whatever",
        "qazwsxedc", "login", "admin", "admin123", "welcome1", "password!", "p@ssw0rd", "p@ssword",
        "changeme", "secret", "starwars", "hottie", "loveme", "zaq12wsx", "batman", "access",
        "flower", "solo", "hunter2", "abcdef", "abcd1234", "computer", "internet", "google",
        "livesignup", "summer2024", "winter2024", "spring2024", "autumn2024", "qwerty12345",
    ])
}
