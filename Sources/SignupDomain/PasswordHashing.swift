/// Turns a password into a self-describing hash string for storage, and checks a password
/// against such a string. A protocol so tests can use a fast or scripted double and so the
/// algorithm can change later (stored hashes name their own algorithm and parameters).
///
/// The password is hashed exactly as given, byte for byte in UTF-8: Swift's `==` treats
/// "é" (NFC) and "e\u{301}" (NFD) as equal, but their hashes differ. Callers normalise first.
public protocol PasswordHashing: Sendable {
    /// A new hash of `password` with a fresh random salt, in a form `verify` understands.
    /// Throws when the hash cannot be computed (for example, memory could not be allocated).
    func hash(_ password: String) throws -> String

    /// Whether `password` matches `hash`. Never throws: a malformed or unknown hash, such as
    /// the "!" marker of accounts that cannot sign in, simply does not match.
    func verify(_ password: String, against hash: String) -> Bool
}
