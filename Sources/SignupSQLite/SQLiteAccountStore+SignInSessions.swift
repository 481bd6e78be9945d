import Foundation
import SignupDomain
import GRDB

extension SQLiteAccountStore {
    // MARK: Signed-in sessions

    public func startSignInSession(_ session: NewSignInSession) throws {
        try write { db in
            try db.execute(
                sql: """
                INSERT INTO sign_in_sessions (id_hash, user_id, created_at, expires_at, last_seen_at, authenticated_at, device,
                    network, public_id, methods)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                arguments: [session.idHash, session.accountID, session.createdAt, session.expiresAt, session.createdAt,
                            session.authenticatedAt, session.device, session.network, session.publicID,
                            session.methods.joined(separator: " ")])
        }
    }

    public func startSignInSession(_ session: NewSignInSession, keepingAtMost keep: Int) throws -> [String] {
        try write { db -> [String] in
            try db.execute(sql: """
                INSERT INTO sign_in_sessions (id_hash, user_id, created_at, expires_at, last_seen_at, authenticated_at, device,
                    network, public_id, methods)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [session.idHash, session.accountID, session.createdAt, session.expiresAt, session.createdAt,
                                  session.authenticatedAt, session.device, session.network, session.publicID,
                            session.methods.joined(separator: " ")])
            // The least recently used go first; the new one always stays.
            return try String.fetchAll(db, sql: """
                DELETE FROM sign_in_sessions WHERE user_id = ? AND id_hash != ? AND id_hash NOT IN (
                    SELECT id_hash FROM sign_in_sessions WHERE user_id = ? AND id_hash != ?
                    ORDER BY last_seen_at DESC, created_at DESC, id_hash LIMIT ?)
                RETURNING id_hash
                """, arguments: [session.accountID, session.idHash, session.accountID, session.idHash, max(0, keep - 1)])
        }
    }

    public func signedInAccount(idHash: String, at now: Date, rules: SignInSessionRules) throws -> Account? {
        let found = try read { db -> (Account, Date)? in
            guard let row = try Row.fetchOne(
                db,
                sql: """
                SELECT users.id, username, email, password_hash, users.created_at, profile, email_verified_at, disabled_at,
                       last_seen_at
                FROM sign_in_sessions JOIN users ON users.id = sign_in_sessions.user_id
                WHERE id_hash = ? AND expires_at > ? AND last_seen_at > ?
                """,
                arguments: [idHash, now, now.addingTimeInterval(-rules.idleTimeout)])
            else { return nil }
            return (Self.account(row), row["last_seen_at"])
        }
        guard let (account, lastSeen) = found else { return nil }
        if now.timeIntervalSince(lastSeen) >= rules.touchInterval {
            try write { db in
                try db.execute(sql: "UPDATE sign_in_sessions SET last_seen_at = ? WHERE id_hash = ?", arguments: [now, idHash])
            }
        }
        return account
    }

    public func endSignInSession(idHash: String) throws {
        try write { db in try db.execute(sql: "DELETE FROM sign_in_sessions WHERE id_hash = ?", arguments: [idHash]) }
    }

    public func endSignInSessions(username: String) throws -> Int {
        try write { db in
            try db.execute(
                sql: """
                DELETE FROM sign_in_sessions
                WHERE user_id IN (SELECT id FROM users WHERE username_canonical = ?)
                """,
                arguments: [Username.canonical(username)])
            return db.changesCount
        }
    }

    public func removeEndedSignInSessions(at now: Date, rules: SignInSessionRules) throws -> Int {
        try removeRows("DELETE FROM sign_in_sessions WHERE expires_at <= ? OR last_seen_at <= ?", [now, now.addingTimeInterval(-rules.idleTimeout)])
    }

    public func signInSessions(ofAccount id: Int64, at now: Date, rules: SignInSessionRules) throws -> [SignInSessionSummary] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT public_id, id_hash, created_at, last_seen_at, authenticated_at, expires_at, device, network, methods
                FROM sign_in_sessions WHERE user_id = ? AND expires_at > ? AND last_seen_at > ?
                ORDER BY last_seen_at DESC, created_at DESC
                """, arguments: [id, now, now.addingTimeInterval(-rules.idleTimeout)]).map { row in
                SignInSessionSummary(publicID: row["public_id"], idHash: row["id_hash"], createdAt: row["created_at"],
                                     lastSeenAt: row["last_seen_at"], authenticatedAt: row["authenticated_at"],
                                     expiresAt: row["expires_at"], device: row["device"], network: row["network"],
                                     methods: (row["methods"] as String).split(separator: " ").map(String.init))
            }
        }
    }

    public func endSignInSession(publicID: String, ofAccount id: Int64) throws -> Bool {
        try write { db in
            try db.execute(sql: "DELETE FROM sign_in_sessions WHERE public_id = ? AND user_id = ?", arguments: [publicID, id])
            return db.changesCount == 1
        }
    }

    public func endSignInSessions(ofAccount id: Int64, keeping idHash: String?) throws -> Int {
        try removeRows("DELETE FROM sign_in_sessions WHERE user_id = ? AND id_hash IS NOT ?", [id, idHash])
    }

    public func recordAuthentication(idHash: String, at date: Date) throws -> Bool {
        try write { db in
            try db.execute(sql: "UPDATE sign_in_sessions SET authenticated_at = ? WHERE id_hash = ?", arguments: [date, idHash])
            return db.changesCount == 1
        }
    }
}
