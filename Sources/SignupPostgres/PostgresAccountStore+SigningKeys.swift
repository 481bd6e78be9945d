import Foundation
import PostgresNIO
import SignupDomain

// MARK: The OpenID provider's signing keys (issue 56)

extension PostgresAccountStore {
    public func signingKeys() throws -> [SigningKey] {
        try run("read the signing keys") { client in
            var keys: [SigningKey] = []
            for try await (id, algorithm, privateKey, created, signsFrom) in try await client.query("""
                SELECT id, algorithm, private_key, created_at, signs_from FROM signing_keys
                """).decode((String, String, String, Date, Date).self) {
                keys.append(SigningKey(id: id, algorithm: algorithm, privateKeyPEM: privateKey, createdAt: created,
                                       signsFrom: signsFrom))
            }
            return keys
        }
    }

    public func addSigningKey(_ key: SigningKey) throws {
        let added = try countRows("store a signing key", """
            INSERT INTO signing_keys (id, algorithm, private_key, created_at, signs_from)
            VALUES (\(key.id), \(key.algorithm), \(key.privateKeyPEM), \(key.createdAt), \(key.signsFrom))
            ON CONFLICT (id) DO NOTHING RETURNING id
            """)
        guard added == 1 else { throw StorageFault("a signing key with the id \(key.id) is stored already") }
    }

    public func removeSigningKeys(ids: [String]) throws {
        guard !ids.isEmpty else { return }
        _ = try countRows("forget signing keys", "DELETE FROM signing_keys WHERE id = ANY(\(ids)) RETURNING id")
    }
}
