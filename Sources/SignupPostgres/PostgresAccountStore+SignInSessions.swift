import Dispatch
import Foundation
import Logging
import PostgresNIO
import SignupDomain

extension PostgresAccountStore {
    // MARK: Signed-in sessions

    public func startSignInSession(_ session: NewSignInSession) throws {
        try run("start a signed-in session") { client in
            try await client.query("""
                INSERT INTO sign_in_sessions (id_hash, user_id, created_at, expires_at, last_seen_at, authenticated_at, device,
                    network, public_id, methods)
                VALUES (\(session.idHash), \(session.accountID), \(session.createdAt), \(session.expiresAt), \(session.createdAt),
                    \(session.authenticatedAt), \(session.device), \(session.network), \(session.publicID),
                    \(session.methods.joined(separator: " ")))
                """)
        }
    }

    public func startSignInSession(_ session: NewSignInSession, keepingAtMost keep: Int) throws -> [String] {
        let logger = self.logger, others = max(0, keep - 1)
        return try run("start a signed-in session") { client in
            try await client.withTransaction(logger: logger) { connection -> [String] in
                try await connection.query("""
                    INSERT INTO sign_in_sessions (id_hash, user_id, created_at, expires_at, last_seen_at, authenticated_at, device,
                        network, public_id, methods)
                    VALUES (\(session.idHash), \(session.accountID), \(session.createdAt), \(session.expiresAt), \(session.createdAt),
                        \(session.authenticatedAt), \(session.device), \(session.network), \(session.publicID),
                        \(session.methods.joined(separator: " ")))
                    """, logger: logger)
                // The least recently used go first; the new one always stays.
                var ended: [String] = []
                for try await hash in try await connection.query("""
                    DELETE FROM sign_in_sessions WHERE user_id = \(session.accountID) AND id_hash != \(session.idHash)
                        AND id_hash NOT IN (
                            SELECT id_hash FROM sign_in_sessions WHERE user_id = \(session.accountID) AND id_hash != \(session.idHash)
                            ORDER BY last_seen_at DESC, created_at DESC, id_hash LIMIT \(others))
                    RETURNING id_hash
                    """, logger: logger).decode(String.self) {
                    ended.append(hash)
                }
                return ended
            }
        }
    }

    public func signedInAccount(idHash: String, at now: Date, rules: SignInSessionRules) throws -> Account? {
        let idleSince = now.addingTimeInterval(-rules.idleTimeout)
        let touchBefore = now.addingTimeInterval(-rules.touchInterval)
        return try run("read a signed-in session") { client in
            // One round trip: the live session's account, its last use moved on only when the
            // written one is older than the touch interval.
            try await client.query("""
                UPDATE sign_in_sessions SET last_seen_at = \(now)
                WHERE id_hash = \(idHash) AND expires_at > \(now) AND last_seen_at > \(idleSince) AND last_seen_at < \(touchBefore)
                """)
            return try await Self.accounts(client.query("""
                SELECT users.id, username, email, password_hash, users.created_at, profile::text, email_verified_at, disabled_at
                FROM sign_in_sessions JOIN users ON users.id = sign_in_sessions.user_id
                WHERE id_hash = \(idHash) AND expires_at > \(now) AND last_seen_at > \(idleSince)
                """)).first
        }
    }

    public func endSignInSession(idHash: String) throws {
        try run("end a signed-in session") { client in
            try await client.query("DELETE FROM sign_in_sessions WHERE id_hash = \(idHash)")
        }
    }

    public func endSignInSessions(username: String) throws -> Int {
        let canonical = Username.canonical(username)
        return try run("end an account's signed-in sessions") { client in
            var ended = 0
            for try await _ in try await client.query("""
                DELETE FROM sign_in_sessions WHERE user_id IN (SELECT id FROM users WHERE username_canonical = \(canonical))
                RETURNING id_hash
                """).decode(String.self) {
                ended += 1
            }
            return ended
        }
    }

    public func signInSessions(ofAccount id: Int64, at now: Date, rules: SignInSessionRules) throws -> [SignInSessionSummary] {
        let idleSince = now.addingTimeInterval(-rules.idleTimeout)
        return try run("read an account's signed-in sessions") { client in
            var sessions: [SignInSessionSummary] = []
            for try await (publicID, idHash, created, lastSeen, authenticated, expires, device, network, methods) in try await client.query("""
                SELECT public_id, id_hash, created_at, last_seen_at, authenticated_at, expires_at, device, network, methods
                FROM sign_in_sessions WHERE user_id = \(id) AND expires_at > \(now) AND last_seen_at > \(idleSince)
                ORDER BY last_seen_at DESC, created_at DESC
                """).decode((String, String, Date, Date, Date, Date, String, String, String).self) {
                sessions.append(SignInSessionSummary(publicID: publicID, idHash: idHash, createdAt: created, lastSeenAt: lastSeen,
                                                     authenticatedAt: authenticated, expiresAt: expires, device: device,
                                                     network: network, methods: methods.split(separator: " ").map(String.init)))
            }
            return sessions
        }
    }

    public func endSignInSession(publicID: String, ofAccount id: Int64) throws -> Bool {
        try run("end a signed-in session") { client in
            try await Self.first(String.self, client.query("""
                DELETE FROM sign_in_sessions WHERE public_id = \(publicID) AND user_id = \(id) RETURNING id_hash
                """)) != nil
        }
    }

    public func endSignInSessions(ofAccount id: Int64, keeping idHash: String?) throws -> Int {
        try run("end an account's other signed-in sessions") { client in
            var ended = 0
            for try await _ in try await client.query("""
                DELETE FROM sign_in_sessions WHERE user_id = \(id) AND id_hash IS DISTINCT FROM \(idHash) RETURNING id_hash
                """).decode(String.self) {
                ended += 1
            }
            return ended
        }
    }

    public func recordAuthentication(idHash: String, at date: Date) throws -> Bool {
        try run("record a fresh sign-in") { client in
            try await Self.first(String.self, client.query("""
                UPDATE sign_in_sessions SET authenticated_at = \(date) WHERE id_hash = \(idHash) RETURNING id_hash
                """)) != nil
        }
    }

    public func removeEndedSignInSessions(at now: Date, rules: SignInSessionRules) throws -> Int {
        let idleSince = now.addingTimeInterval(-rules.idleTimeout)
        return try countRows("remove ended signed-in sessions", """
                DELETE FROM sign_in_sessions WHERE expires_at <= \(now) OR last_seen_at <= \(idleSince) RETURNING id_hash
                """)
    }
}
