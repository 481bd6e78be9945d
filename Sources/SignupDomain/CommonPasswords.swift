import Foundation
import Zxcvbn

/// A blocklist of passwords too commonly used to accept, compared whole and case-folded
/// (never as substrings: "password" is refused, "password-grapefruit-lantern" is not).
public struct CommonPasswords: Sendable {
    private let folded: Set<String>

    public init<S: Sequence>(_ passwords: S) where S.Element == String {
        folded = Set(passwords.map(Self.fold))
    }

    public func contains(_ password: String) -> Bool {
        folded.contains(Self.fold(password))
    }

    public var count: Int { folded.count }

    private static func fold(_ password: String) -> String {
        password.canonicallyComposed.lowercased()
    }

    /// The 30,000 most used passwords of public breaches: zxcvbn's password frequency list
    /// (MIT; see Sources/Zxcvbn/Resources/LICENSE-zxcvbn.txt).
    public static let builtIn = CommonPasswords(WordLists.commonPasswords)
}
