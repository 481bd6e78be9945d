import Crypto
import Foundation

/// How often a password appears in known data breaches, from Have I Been Pwned's Pwned
/// Passwords data: a local copy of the file, or the k-anonymity range API. Both are keyed by
/// the password's SHA-1 (upper-case hex), never the password.
public protocol BreachedPasswordLookup: Sendable {
    /// Times the password with this SHA-1 was seen in breaches; 0 when never.
    func timesSeen(sha1 hash: String) throws -> Int
}

public enum BreachedPasswords {
    /// The upper-case hex SHA-1 of the password's UTF-8 after NFC (how the corpus is keyed).
    public static func sha1(of password: String) -> String {
        Insecure.SHA1.hash(data: Data(password.canonicallyComposed.utf8))
            .map { String(format: "%02X", $0) }.joined()
    }
}

public struct BreachedPasswordError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// A short, stable label for metrics: `busy`, `too_large`, `timeout`, `status`,
    /// `unreachable`, `garbage` (the range API), or `unreadable` (anything else).
    public let reason: String
    public init(_ description: String, reason: String = "unreadable") {
        self.description = description
        self.reason = reason
    }
}

/// The Pwned Passwords file (`SHA1:COUNT` lines sorted by hash, tens of GB in real use),
/// searched in place: a binary search over byte offsets, about 35 small reads for a billion
/// lines, and nothing loaded into memory.
public struct PwnedPasswordsFile: BreachedPasswordLookup {
    public let path: String
    private let size: Int64

    public init(path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw BreachedPasswordError("The breached-passwords file \(path) cannot be read: \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw BreachedPasswordError("The breached-passwords file \(path) is not a regular file")
        }
        self.path = path
        size = Int64(info.st_size)
        // A file that does not look like `SHA1:COUNT` lines is refused now, not at the
        // first sign-up.
        let first = try withDescriptor { try Self.line(in: $0, startingAt: 0, size: size) }
        if size > 0, first.flatMap(Self.parse) == nil {
            throw BreachedPasswordError("The breached-passwords file \(path) does not start with a 'SHA1:COUNT' line")
        }
    }

    public func timesSeen(sha1 hash: String) throws -> Int {
        let target = hash.uppercased()
        return try withDescriptor { descriptor in
            // Invariant: every line starting before `low` sorts below the target; the line
            // holding the target, if any, starts at or after `low` and before `high`.
            var low: Int64 = 0
            var high = size
            while low < high {
                let middle = low + (high - low) / 2
                // The first whole line starting at or after `middle`.
                guard let (start, text) = try Self.lineStart(in: descriptor, atOrAfter: middle, size: size), start < high else {
                    high = middle
                    continue
                }
                guard let (lineHash, count) = Self.parse(text) else {
                    throw BreachedPasswordError("The breached-passwords file \(path) has a malformed line at byte \(start)")
                }
                if lineHash == target { return count }
                if lineHash < target {
                    low = start + Int64(text.utf8.count) + 1
                } else {
                    high = middle
                }
            }
            return 0
        }
    }

    private func withDescriptor<T>(_ body: (Int32) throws -> T) throws -> T {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw BreachedPasswordError("The breached-passwords file \(path) cannot be opened: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        return try body(descriptor)
    }

    /// `HASH:COUNT` (with or without a trailing CR) as (upper-case hash, count).
    static func parse(_ line: String) -> (String, Int)? {
        let trimmed = line.hasSuffix("\r") ? String(line.dropLast()) : line
        guard let colon = trimmed.firstIndex(of: ":") else { return nil }
        let hash = trimmed[..<colon].uppercased()
        guard hash.utf8.count == 40, let count = Int(trimmed[trimmed.index(after: colon)...]) else { return nil }
        return (hash, count)
    }

    /// The line starting at `offset` (without its newline), or nil at the end.
    static func line(in descriptor: Int32, startingAt offset: Int64, size: Int64) throws -> String? {
        guard offset < size else { return nil }
        var buffer = [UInt8](repeating: 0, count: 128)  // a line is at most ~60 bytes
        let read = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        guard read > 0 else { throw BreachedPasswordError("reading the breached-passwords file failed: \(String(cString: strerror(errno)))") }
        let bytes = buffer[0..<read]
        let end = bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    /// The first line starting at or after `offset`: where it starts, and its text.
    static func lineStart(in descriptor: Int32, atOrAfter offset: Int64, size: Int64) throws -> (Int64, String)? {
        if offset == 0 { return try line(in: descriptor, startingAt: 0, size: size).map { (0, $0) } }
        // The line that `offset - 1` is in ends at the next newline; the wanted one follows it.
        var position = offset - 1
        var buffer = [UInt8](repeating: 0, count: 128)
        while position < size {
            let read = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(position)) }
            guard read > 0 else { return nil }
            if let newline = buffer[0..<read].firstIndex(of: UInt8(ascii: "\n")) {
                let start = position + Int64(newline) + 1
                return try line(in: descriptor, startingAt: start, size: size).map { (start, $0) }
            }
            position += Int64(read)
        }
        return nil
    }
}
