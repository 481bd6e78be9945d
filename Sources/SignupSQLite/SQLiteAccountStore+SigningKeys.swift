import Foundation
import SignupDomain
import GRDB

// MARK: The OpenID provider's signing keys (issue 56)

extension SQLiteAccountStore {
    public func signingKeys() throws -> [SigningKey] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT id, algorithm, private_key, created_at, signs_from FROM signing_keys").map { row in
                SigningKey(id: row["id"], algorithm: row["algorithm"], privateKeyPEM: row["private_key"],
                           createdAt: row["created_at"], signsFrom: row["signs_from"])
            }
        }
    }

    public func addSigningKey(_ key: SigningKey) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO signing_keys (id, algorithm, private_key, created_at, signs_from) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(id) DO NOTHING
                """, arguments: [key.id, key.algorithm, key.privateKeyPEM, key.createdAt, key.signsFrom])
            guard db.changesCount == 1 else { throw StorageFault("a signing key with the id \(key.id) is stored already") }
        }
    }

    public func removeSigningKeys(ids: [String]) throws {
        guard !ids.isEmpty else { return }
        _ = try removeRows("DELETE FROM signing_keys WHERE id IN (\(ids.map { _ in "?" }.joined(separator: ", ")))",
                           StatementArguments(ids))
    }
}
