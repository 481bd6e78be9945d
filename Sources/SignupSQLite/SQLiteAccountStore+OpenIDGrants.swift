import Foundation
import SignupDomain
import GRDB

// MARK: The OpenID provider's codes, tokens and consents (issue 56)

extension SQLiteAccountStore {
    public func storeAuthorizationCode(_ code: AuthorizationCode, keepingAtMost keep: Int) throws {
        let grant = code.grant
        try write { db in
            try db.execute(sql: """
                INSERT INTO oauth_grants (id, client_id, account_id, scopes, session_id, auth_time, methods, created_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [grant.id, grant.clientID, grant.accountID, grant.scopes.joined(separator: " "), grant.sessionID,
                                  grant.authTime, grant.methods.joined(separator: " "), grant.createdAt, grant.expiresAt])
            try db.execute(sql: """
                INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, nonce, expires_at) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [code.codeHash, grant.id, code.redirectURI, code.codeChallenge, code.nonce, code.expiresAt])
            // The newest `keep` stay; the new one always among them.
            try db.execute(sql: """
                DELETE FROM oauth_grants WHERE account_id = ? AND client_id = ? AND id != ? AND id NOT IN (
                    SELECT id FROM oauth_grants WHERE account_id = ? AND client_id = ? AND id != ?
                    ORDER BY created_at DESC, id LIMIT ?)
                """, arguments: [grant.accountID, grant.clientID, grant.id, grant.accountID, grant.clientID, grant.id, max(0, keep - 1)])
        }
    }

    public func redeemAuthorizationCode(hash: String, at now: Date, issuing tokens: TokenPair,
                                        if accepts: @escaping @Sendable (AuthorizationCode) -> Bool) throws -> GrantRedemption {
        try write { db -> GrantRedemption in
            if let row = try Row.fetchOne(db, sql: """
                UPDATE oauth_codes SET spent_at = ? WHERE code_hash = ? AND spent_at IS NULL AND expires_at > ?
                RETURNING grant_id, redirect_uri, code_challenge, nonce, expires_at
                """, arguments: [now, hash, now]) {
                let grantID: String = row["grant_id"]
                guard let grant = try Self.grant(id: grantID, db) else { return .unknown }
                let code = AuthorizationCode(codeHash: hash, grant: grant, redirectURI: row["redirect_uri"],
                                             codeChallenge: row["code_challenge"], nonce: row["nonce"], expiresAt: row["expires_at"])
                guard accepts(code) else {
                    try db.execute(sql: "DELETE FROM oauth_grants WHERE id = ?", arguments: [grantID])
                    return .refused(code)
                }
                try Self.issue(tokens, grantID: grantID, db)
                return .redeemed(code)
            }
            // Spent before: whoever holds a copy must not keep what the first use got.
            guard let spent = try Row.fetchOne(db, sql: "SELECT grant_id FROM oauth_codes WHERE code_hash = ? AND spent_at IS NOT NULL",
                                               arguments: [hash]) else { return .unknown }
            let grantID: String = spent["grant_id"]
            try db.execute(sql: "DELETE FROM oauth_grants WHERE id = ?", arguments: [grantID])
            return .reused(grantID: grantID)
        }
    }

    public func rotateRefreshToken(hash: String, clientID: String, at now: Date, issuing tokens: TokenPair) throws -> GrantRedemption {
        try write { db -> GrantRedemption in
            if let grantID = try String.fetchOne(db, sql: """
                UPDATE oauth_tokens SET spent_at = ?
                WHERE token_hash = ? AND kind = 'refresh' AND spent_at IS NULL AND expires_at > ?
                    AND grant_id IN (SELECT id FROM oauth_grants WHERE client_id = ?)
                RETURNING grant_id
                """, arguments: [now, hash, now, clientID]) {
                try Self.issue(tokens, grantID: grantID, db)
                return try Self.grant(id: grantID, db).map(GrantRedemption.rotated) ?? .unknown
            }
            guard let grantID = try String.fetchOne(db, sql: """
                SELECT grant_id FROM oauth_tokens
                WHERE token_hash = ? AND kind = 'refresh' AND spent_at IS NOT NULL
                    AND grant_id IN (SELECT id FROM oauth_grants WHERE client_id = ?)
                """, arguments: [hash, clientID]) else { return .unknown }
            try db.execute(sql: "DELETE FROM oauth_grants WHERE id = ?", arguments: [grantID])
            return .reused(grantID: grantID)
        }
    }

    public func accessToken(hash: String, at now: Date) throws -> LiveAccessToken? {
        try read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT grant_id, expires_at FROM oauth_tokens
                WHERE token_hash = ? AND kind = 'access' AND spent_at IS NULL AND expires_at > ?
                """, arguments: [hash, now]), let grant = try Self.grant(id: row["grant_id"], db) else { return nil }
            return LiveAccessToken(grant: grant, expiresAt: row["expires_at"])
        }
    }

    public func token(hash: String, clientID: String, at now: Date) throws -> (grant: OpenIDGrant, isRefresh: Bool)? {
        try read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT grant_id, kind FROM oauth_tokens WHERE token_hash = ? AND spent_at IS NULL AND expires_at > ?
                """, arguments: [hash, now]),
                let grant = try Self.grant(id: row["grant_id"], db), grant.clientID == clientID else { return nil }
            return (grant, (row["kind"] as String) == "refresh")
        }
    }

    public func revokeAccessToken(hash: String) throws {
        _ = try removeRows("DELETE FROM oauth_tokens WHERE token_hash = ? AND kind = 'access'", [hash])
    }

    public func revokeGrant(id: String) throws -> Bool {
        try removeRows("DELETE FROM oauth_grants WHERE id = ?", [id]) == 1
    }

    public func removeExpiredGrants(at now: Date) throws -> Int {
        try write { db in
            try db.execute(sql: "DELETE FROM oauth_grants WHERE expires_at <= ?", arguments: [now])
            let grants = db.changesCount
            // An expired access token cannot be reused; an expired refresh token stays with its
            // grant, so a copy presented later still revokes it.
            try db.execute(sql: "DELETE FROM oauth_tokens WHERE kind = 'access' AND expires_at <= ?", arguments: [now])
            return grants
        }
    }

    public func consent(ofAccount id: Int64, client clientID: String) throws -> ClientConsent? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT client_id, scopes, granted_at FROM oauth_consents WHERE account_id = ? AND client_id = ?",
                             arguments: [id, clientID]).map(Self.consent)
        }
    }

    public func recordConsent(ofAccount id: Int64, client clientID: String, scopes: [String], at date: Date,
                              events: [OutboxEvent]) throws {
        try write { db in
            let before = try String.fetchOne(db, sql: "SELECT scopes FROM oauth_consents WHERE account_id = ? AND client_id = ?",
                                             arguments: [id, clientID])
            let widened = ClientConsent.union(before.map(Self.words) ?? [], scopes)
            try db.execute(sql: """
                INSERT INTO oauth_consents (account_id, client_id, scopes, granted_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (account_id, client_id) DO UPDATE SET scopes = excluded.scopes
                """, arguments: [id, clientID, widened.joined(separator: " "), date])
            for event in events { try Self.enqueue(event, db) }
        }
    }

    public func consents(ofAccount id: Int64, at now: Date) throws -> [ClientConsent] {
        try read { db in
            let consents = try Row.fetchAll(db, sql: "SELECT client_id, scopes, granted_at FROM oauth_consents WHERE account_id = ?",
                                            arguments: [id]).map(Self.consent)
            let grants = try Row.fetchAll(db, sql: """
                SELECT client_id, scopes, created_at AS granted_at FROM oauth_grants WHERE account_id = ? AND expires_at > ?
                """, arguments: [id, now]).map(Self.consent)
            return ClientConsent.merged(consents: consents, grants: grants)
        }
    }

    public func revokeClient(_ clientID: String, ofAccount id: Int64, events: [OutboxEvent]) throws -> Int {
        try write { db in
            try db.execute(sql: "DELETE FROM oauth_consents WHERE account_id = ? AND client_id = ?", arguments: [id, clientID])
            let consents = db.changesCount
            try db.execute(sql: "DELETE FROM oauth_grants WHERE account_id = ? AND client_id = ?", arguments: [id, clientID])
            let grants = db.changesCount
            // Told only when there was something to withdraw.
            if consents + grants > 0 { for event in events { try Self.enqueue(event, db) } }
            return grants
        }
    }

    public func endGrantsOfEndedSessions(announcing announce: @escaping @Sendable (OpenIDGrant) -> OutboxEvent?) throws -> Int {
        try write { db in
            let ended = try Row.fetchAll(db, sql: """
                DELETE FROM oauth_grants WHERE NOT EXISTS (SELECT 1 FROM sign_in_sessions WHERE public_id = oauth_grants.session_id)
                RETURNING id, client_id, account_id, scopes, session_id, auth_time, methods, created_at, expires_at
                """).map(Self.grant)
            for event in ended.compactMap(announce) { try Self.enqueue(event, db) }
            return ended.count
        }
    }

    // MARK: Rows

    /// Stores a redeemed code's or a rotated token's pair; the grant lives as long as its
    /// newest refresh token.
    private static func issue(_ tokens: TokenPair, grantID: String, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO oauth_tokens (token_hash, grant_id, kind, expires_at) VALUES (?, ?, 'access', ?), (?, ?, 'refresh', ?)
            """, arguments: [tokens.accessHash, grantID, tokens.accessExpiresAt, tokens.refreshHash, grantID, tokens.refreshExpiresAt])
        try db.execute(sql: "UPDATE oauth_grants SET expires_at = ? WHERE id = ?", arguments: [tokens.refreshExpiresAt, grantID])
    }

    private static func grant(id: String, _ db: Database) throws -> OpenIDGrant? {
        try Row.fetchOne(db, sql: """
            SELECT id, client_id, account_id, scopes, session_id, auth_time, methods, created_at, expires_at FROM oauth_grants WHERE id = ?
            """, arguments: [id]).map(grant)
    }

    private static func grant(_ row: Row) -> OpenIDGrant {
        OpenIDGrant(id: row["id"], clientID: row["client_id"], accountID: row["account_id"], scopes: words(row["scopes"]),
                    sessionID: row["session_id"], authTime: row["auth_time"], methods: words(row["methods"]),
                    createdAt: row["created_at"], expiresAt: row["expires_at"])
    }

    private static func consent(_ row: Row) -> ClientConsent {
        ClientConsent(clientID: row["client_id"], scopes: words(row["scopes"]), grantedAt: row["granted_at"])
    }

    private static func words(_ text: String) -> [String] { text.split(separator: " ").map(String.init) }
}
