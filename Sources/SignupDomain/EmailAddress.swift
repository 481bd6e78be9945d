import Foundation

/// Checks the shape of an email address the way browsers check `<input type="email">`
/// (WHATWG HTML "valid email address"), additionally requiring a dot in the domain, since
/// sign-ups come from the public internet, not `user@localhost`.
public enum EmailAddress {
    public static let maximumLength = 254

    /// The form addresses are compared in (and unique in, among proved ones):
    /// "Ada@Example.ORG" is "ada@example.org".
    public static func canonical(_ email: String) -> String {
        email.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// "a…@example.org": enough for the person to recognise their address on a page that
    /// anyone holding the link could see, not enough to learn it.
    public static func masked(_ email: String) -> String {
        guard let at = email.lastIndex(of: "@"), at > email.startIndex else { return "…" }
        return String(email[email.startIndex]) + "…" + email[at...]
    }

    public static func isValid(_ address: String) -> Bool {
        let utf8 = Array(address.utf8)
        guard utf8.count <= maximumLength,
              let at = utf8.firstIndex(of: UInt8(ascii: "@")),
              at > 0, at <= 64
        else { return false }
        let local = utf8[..<at]
        let domain = utf8[(at + 1)...]
        guard local.allSatisfy(isLocalPartByte) else { return false }
        let labels = domain.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        return labels.allSatisfy(isValidLabel)
    }

    private static func isLocalPartByte(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || "!#$%&'*+/=?^_`{|}~.-".utf8.contains(byte)
    }

    private static func isValidLabel(_ label: ArraySlice<UInt8>) -> Bool {
        guard let first = label.first, let last = label.last, label.count <= 63 else { return false }
        return isAlphanumeric(first) && isAlphanumeric(last)
            && label.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return false
        }
    }
}
