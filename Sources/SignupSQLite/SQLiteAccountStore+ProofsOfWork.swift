import Foundation
import SignupDomain
import GRDB

extension SQLiteAccountStore {
    // MARK: Proofs of work

    public func spendProof(_ challenge: String, until expiresAt: Date) throws -> Bool {
        try write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO spent_proofs (challenge, expires_at) VALUES (?, ?)",
                           arguments: [challenge, expiresAt])
            return db.changesCount == 1
        }
    }

    public func removeExpiredProofs(at now: Date) throws -> Int {
        try removeRows("DELETE FROM spent_proofs WHERE expires_at <= ?", [now])
    }
}
