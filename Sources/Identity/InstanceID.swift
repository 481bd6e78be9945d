import Foundation
import WebKernel

/// The name of one server process among several behind a proxy. It starts every form token
/// the instance mints (`web1.3f9c…`), so nginx can send a live form's `/events` and
/// `/fields` to the instance that holds its session (deploy/nginx/livesignup-instances.conf).
/// Lowercase letters, digits and `-`, 1 to 32 characters: safe unescaped in a URL, in an
/// nginx map, and in a metric label.
public enum InstanceID {
    public static let maximumLength = 32

    public static func isValid(_ id: String) -> Bool {
        let utf8 = id.utf8
        return (1...maximumLength).contains(utf8.count) && utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
        }
    }

    /// Why `id` cannot be an instance id, or nil if it can.
    public static func problem(with id: String) -> String? {
        isValid(id) ? nil
            : "An instance id is 1 to \(maximumLength) characters of a-z, 0-9 and '-' ('\(id)' is not)."
    }

    /// The default: the host's name up to its first dot, lowercased, other characters as
    /// `-`, cut to 32 characters ("Web-1.example.com" → "web-1"); "livesignup" if nothing
    /// is left. Two instances on one host need `--instance-id`.
    public static func fromHostName(_ hostName: String = ProcessInfo.processInfo.hostName) -> String {
        let label = hostName.split(separator: ".", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let cleaned = String(label.lowercased().unicodeScalars.prefix(maximumLength).map { scalar -> Character in
            let isAllowed = ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar)
            return isAllowed ? Character(scalar) : "-"
        })
        return isValid(cleaned) && cleaned.contains(where: { $0 != "-" }) ? cleaned : "livesignup"
    }
}
