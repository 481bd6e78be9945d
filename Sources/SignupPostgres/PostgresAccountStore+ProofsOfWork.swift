import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
    // MARK: Proofs of work

    public func spendProof(_ challenge: String, until expiresAt: Date) throws -> Bool {
        try run("spend a proof of work") { client in
            var inserted = false
            for try await _ in try await client.query("""
                INSERT INTO spent_proofs (challenge, expires_at) VALUES (\(challenge), \(expiresAt))
                ON CONFLICT (challenge) DO NOTHING RETURNING challenge
                """).decode(String.self) {
                inserted = true
            }
            return inserted
        }
    }

    public func removeExpiredProofs(at now: Date) throws -> Int {
        try countRows("remove expired proofs of work", "DELETE FROM spent_proofs WHERE expires_at <= \(now) RETURNING challenge")
    }
}
