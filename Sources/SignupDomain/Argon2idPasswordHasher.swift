import CSodium
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a password could not be hashed.
public enum PasswordHashingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The operating system refused the memory argon2id asked for (`memLimitBytes`).
    case outOfMemory
    /// Anything else libsodium rejected, such as parameters outside its limits.
    case failed

    public var description: String {
        switch self {
        case .outOfMemory:
            return "Password hashing failed: not enough memory for argon2id."
        case .failed:
            return "Password hashing failed: libsodium rejected the request (parameters out of range or library not initialised)."
        }
    }
}

/// Argon2id (RFC 9106) through libsodium. Hashes are PHC-style strings such as
/// `$argon2id$v=19$m=65536,t=2,p=1$<salt>$<hash>` that carry their own salt and parameters,
/// so verification needs nothing else and old hashes keep verifying after the defaults change.
///
/// Swift `String`s cannot be zeroed (they are immutable, may be copied or shared), so this type
/// only wipes its own copy of the bytes; callers should drop the plaintext as soon as possible.
public struct Argon2idPasswordHasher: PasswordHashing {
    /// Argon2 passes over memory (t).
    public let opsLimit: UInt64
    /// Memory per hash in bytes (m, encoded in KiB in the hash). Also the peak memory each
    /// concurrent hash or verify needs, which is why `PasswordHashingQueue` bounds concurrency.
    public let memLimitBytes: Int

    /// Defaults are libsodium's INTERACTIVE limits (t=2, m=64 MiB), above OWASP's minimum
    /// for argon2id (t=2, m=19 MiB, p=1). libsodium always uses one lane (p=1).
    public init(opsLimit: UInt64 = 2, memLimitBytes: Int = 64 * 1024 * 1024) {
        self.opsLimit = opsLimit
        self.memLimitBytes = memLimitBytes
    }

    /// OWASP's minimum recommended argon2id parameters (t=2, m=19 MiB): cheaper, for tests
    /// and benchmarks, or hosts that cannot afford 64 MiB per concurrent sign-up.
    public static let owaspMinimum = Argon2idPasswordHasher(opsLimit: 2, memLimitBytes: 19 * 1024 * 1024)

    /// `sodium_init()` is idempotent and thread-safe; a static let runs it once, lazily.
    private static let sodiumIsReady: Bool = sodium_init() >= 0

    public func hash(_ password: String) throws -> String {
        guard Self.sodiumIsReady else { throw PasswordHashingError.failed }
        var output = [CChar](repeating: 0, count: Int(crypto_pwhash_strbytes()))
        let (status, error): (Int32, Int32) = Self.withZeroedAfterUse(password) { bytes, length in
            errno = 0
            let status = output.withUnsafeMutableBufferPointer { out in
                crypto_pwhash_str_alg(out.baseAddress!, bytes, length, opsLimit, memLimitBytes,
                                      crypto_pwhash_alg_argon2id13())
            }
            return (status, errno)  // read at once, before cleanup can touch errno
        }
        guard status == 0 else {
            // A refused allocation of argon2's memory leaves ENOMEM; bad parameters EINVAL/EFBIG.
            throw error == ENOMEM ? PasswordHashingError.outOfMemory : PasswordHashingError.failed
        }
        // libsodium NUL-terminates the string inside the STRBYTES buffer.
        return output.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    public func verify(_ password: String, against hash: String) -> Bool {
        guard Self.sodiumIsReady else { return false }
        // Only argon2id hashes are ours; rejecting others up front also keeps "!" and garbage
        // away from the parser. libsodium compares the computed hash in constant time.
        guard hash.hasPrefix("$argon2id$") else { return false }
        return Self.withZeroedAfterUse(password) { bytes, length in
            hash.withCString { crypto_pwhash_str_verify($0, bytes, length) == 0 }
        }
    }

    /// Whether `hash` should be replaced (after a successful `verify`, while the plaintext is
    /// at hand) because it was made with other parameters or is not an argon2id hash at all.
    public func needsRehash(_ hash: String) -> Bool {
        guard Self.sodiumIsReady, hash.hasPrefix("$argon2id$") else { return true }
        // 0: same algorithm and parameters; 1: different parameters; -1: malformed.
        return hash.withCString { crypto_pwhash_str_needs_rehash($0, opsLimit, memLimitBytes) } != 0
    }

    /// Hands `body` the password's UTF-8 bytes in a buffer this type owns, then wipes that
    /// buffer with `sodium_memzero` (which the optimiser cannot remove) whatever `body` does.
    private static func withZeroedAfterUse<Result>(
        _ password: String,
        _ body: (UnsafePointer<CChar>, UInt64) -> Result
    ) -> Result {
        var bytes = [UInt8]()
        // Reserved up front so appending never reallocates and leaves an unwiped copy behind.
        bytes.reserveCapacity(password.utf8.count + 1)
        bytes.append(contentsOf: password.utf8)  // straight from the String, no temporary array
        let length = UInt64(bytes.count)
        // A terminator libsodium never reads (it takes the length) so that even an empty
        // password has a real, non-nil buffer to point at, as its non-null parameters require.
        bytes.append(0)
        defer {
            bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
        }
        return bytes.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: CChar.self), length)
        }
    }
}
