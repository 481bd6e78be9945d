import Foundation
import Logging
import PostgresNIO
import SignupDomain

// MARK: The OpenID provider's codes, tokens and consents (issue 56)

extension PostgresAccountStore {
    public func storeAuthorizationCode(_ code: AuthorizationCode, keepingAtMost keep: Int) throws {
        let logger = self.logger, grant = code.grant, others = max(0, keep - 1)
        let scopes = grant.scopes.joined(separator: " "), methods = grant.methods.joined(separator: " ")
        try run("store an authorization code") { client in
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("""
                    INSERT INTO oauth_grants (id, client_id, account_id, scopes, session_id, auth_time, methods, created_at, expires_at)
                    VALUES (\(grant.id), \(grant.clientID), \(grant.accountID), \(scopes), \(grant.sessionID), \(grant.authTime),
                        \(methods), \(grant.createdAt), \(grant.expiresAt))
                    """, logger: logger)
                try await connection.query("""
                    INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, nonce, expires_at)
                    VALUES (\(code.codeHash), \(grant.id), \(code.redirectURI), \(code.codeChallenge), \(code.nonce), \(code.expiresAt))
                    """, logger: logger)
                // The newest `keep` stay; the new one always among them.
                try await connection.query("""
                    DELETE FROM oauth_grants WHERE account_id = \(grant.accountID) AND client_id = \(grant.clientID)
                        AND id <> \(grant.id) AND id NOT IN (
                            SELECT id FROM oauth_grants WHERE account_id = \(grant.accountID) AND client_id = \(grant.clientID)
                                AND id <> \(grant.id)
                            ORDER BY created_at DESC, id LIMIT \(others))
                    """, logger: logger)
            }
        }
    }

    public func redeemAuthorizationCode(hash: String, at now: Date, issuing tokens: TokenPair,
                                        if accepts: @escaping @Sendable (AuthorizationCode) -> Bool) throws -> GrantRedemption {
        let logger = self.logger
        return try run("redeem an authorization code") { client in
            try await client.withTransaction(logger: logger) { connection -> GrantRedemption in
                // One statement spends it: two instances racing for one code, one row each time.
                // (Every row read before the next statement: one connection, one query at a time.)
                var spent: (String, String, String?, String?, Date)?
                for try await row in try await connection.query("""
                    UPDATE oauth_codes SET spent_at = \(now) WHERE code_hash = \(hash) AND spent_at IS NULL AND expires_at > \(now)
                    RETURNING grant_id, redirect_uri, code_challenge, nonce, expires_at
                    """, logger: logger).decode((String, String, String?, String?, Date).self) { spent = row }
                if let (grantID, redirectURI, challenge, nonce, expires) = spent {
                    guard let grant = try await Self.grant(id: grantID, connection, logger) else { return .unknown }
                    let code = AuthorizationCode(codeHash: hash, grant: grant, redirectURI: redirectURI, codeChallenge: challenge,
                                                 nonce: nonce, expiresAt: expires)
                    guard accepts(code) else {
                        try await connection.query("DELETE FROM oauth_grants WHERE id = \(grantID)", logger: logger)
                        return .refused(code)
                    }
                    try await Self.issue(tokens, grantID: grantID, connection, logger)
                    return .redeemed(code)
                }
                // Spent before: whoever holds a copy must not keep what the first use got.
                guard let grantID = try await Self.first(String.self, connection.query("""
                    DELETE FROM oauth_grants WHERE id = (SELECT grant_id FROM oauth_codes WHERE code_hash = \(hash) AND spent_at IS NOT NULL)
                    RETURNING id
                    """, logger: logger)) else { return .unknown }
                return .reused(grantID: grantID)
            }
        }
    }

    public func rotateRefreshToken(hash: String, clientID: String, at now: Date, issuing tokens: TokenPair) throws -> GrantRedemption {
        let logger = self.logger
        return try run("rotate a refresh token") { client in
            try await client.withTransaction(logger: logger) { connection -> GrantRedemption in
                if let grantID = try await Self.first(String.self, connection.query("""
                    UPDATE oauth_tokens SET spent_at = \(now)
                    WHERE token_hash = \(hash) AND kind = 'refresh' AND spent_at IS NULL AND expires_at > \(now)
                        AND grant_id IN (SELECT id FROM oauth_grants WHERE client_id = \(clientID))
                    RETURNING grant_id
                    """, logger: logger)) {
                    try await Self.issue(tokens, grantID: grantID, connection, logger)
                    return try await Self.grant(id: grantID, connection, logger).map(GrantRedemption.rotated) ?? .unknown
                }
                guard let grantID = try await Self.first(String.self, connection.query("""
                    DELETE FROM oauth_grants WHERE client_id = \(clientID) AND id = (
                        SELECT grant_id FROM oauth_tokens WHERE token_hash = \(hash) AND kind = 'refresh' AND spent_at IS NOT NULL)
                    RETURNING id
                    """, logger: logger)) else { return .unknown }
                return .reused(grantID: grantID)
            }
        }
    }

    public func accessToken(hash: String, at now: Date) throws -> LiveAccessToken? {
        let logger = self.logger
        return try run("read an access token") { client in
            try await client.withConnection { connection -> LiveAccessToken? in
                var found: (String, Date)?
                for try await row in try await connection.query("""
                    SELECT grant_id, expires_at FROM oauth_tokens
                    WHERE token_hash = \(hash) AND kind = 'access' AND spent_at IS NULL AND expires_at > \(now)
                    """, logger: logger).decode((String, Date).self) { found = row }
                guard let (grantID, expires) = found, let grant = try await Self.grant(id: grantID, connection, logger) else { return nil }
                return LiveAccessToken(grant: grant, expiresAt: expires)
            }
        }
    }

    public func token(hash: String, clientID: String, at now: Date) throws -> (grant: OpenIDGrant, isRefresh: Bool)? {
        let logger = self.logger
        let found = try run("read a token") { client in
            try await client.withConnection { connection -> Found? in
                var found: (String, String)?
                for try await row in try await connection.query("""
                    SELECT grant_id, kind FROM oauth_tokens WHERE token_hash = \(hash) AND spent_at IS NULL AND expires_at > \(now)
                    """, logger: logger).decode((String, String).self) { found = row }
                guard let (grantID, kind) = found, let grant = try await Self.grant(id: grantID, connection, logger),
                      grant.clientID == clientID else { return nil }
                return Found(grant: grant, isRefresh: kind == "refresh")
            }
        }
        return found.map { ($0.grant, $0.isRefresh) }
    }

    public func revokeAccessToken(hash: String) throws {
        _ = try countRows("revoke an access token", "DELETE FROM oauth_tokens WHERE token_hash = \(hash) AND kind = 'access' RETURNING grant_id")
    }

    public func revokeGrant(id: String) throws -> Bool {
        try countRows("revoke a grant", "DELETE FROM oauth_grants WHERE id = \(id) RETURNING id") == 1
    }

    public func removeExpiredGrants(at now: Date) throws -> Int {
        let grants = try countRows("forget expired grants", "DELETE FROM oauth_grants WHERE expires_at <= \(now) RETURNING id")
        // An expired access token cannot be reused; an expired refresh token stays with its
        // grant, so a copy presented later still revokes it.
        _ = try countRows("forget expired access tokens",
                          "DELETE FROM oauth_tokens WHERE kind = 'access' AND expires_at <= \(now) RETURNING grant_id")
        return grants
    }

    public func consent(ofAccount id: Int64, client clientID: String) throws -> ClientConsent? {
        try run("read a consent") { client in
            for try await (client, scopes, granted) in try await client.query("""
                SELECT client_id, scopes, granted_at FROM oauth_consents WHERE account_id = \(id) AND client_id = \(clientID)
                """).decode((String, String, Date).self) {
                return ClientConsent(clientID: client, scopes: Self.words(scopes), grantedAt: granted)
            }
            return nil
        }
    }

    public func recordConsent(ofAccount id: Int64, client clientID: String, scopes: [String], at date: Date,
                              events: [OutboxEvent]) throws {
        let logger = self.logger
        try run("record a consent") { client in
            try await client.withTransaction(logger: logger) { connection in
                let before = try await Self.first(String.self, connection.query("""
                    SELECT scopes FROM oauth_consents WHERE account_id = \(id) AND client_id = \(clientID) FOR UPDATE
                    """, logger: logger))
                let widened = ClientConsent.union(before.map(Self.words) ?? [], scopes).joined(separator: " ")
                try await connection.query("""
                    INSERT INTO oauth_consents (account_id, client_id, scopes, granted_at) VALUES (\(id), \(clientID), \(widened), \(date))
                    ON CONFLICT (account_id, client_id) DO UPDATE SET scopes = EXCLUDED.scopes
                    """, logger: logger)
                for event in events { try await Self.enqueue(event, connection, logger) }
            }
        }
    }

    public func consents(ofAccount id: Int64, at now: Date) throws -> [ClientConsent] {
        try run("read an account's applications") { client in
            var consents: [ClientConsent] = [], grants: [ClientConsent] = []
            for try await (client, scopes, granted) in try await client.query("""
                SELECT client_id, scopes, granted_at FROM oauth_consents WHERE account_id = \(id)
                """).decode((String, String, Date).self) {
                consents.append(ClientConsent(clientID: client, scopes: Self.words(scopes), grantedAt: granted))
            }
            for try await (client, scopes, created) in try await client.query("""
                SELECT client_id, scopes, created_at FROM oauth_grants WHERE account_id = \(id) AND expires_at > \(now)
                """).decode((String, String, Date).self) {
                grants.append(ClientConsent(clientID: client, scopes: Self.words(scopes), grantedAt: created))
            }
            return ClientConsent.merged(consents: consents, grants: grants)
        }
    }

    public func revokeClient(_ clientID: String, ofAccount id: Int64, events: [OutboxEvent]) throws -> Int {
        let logger = self.logger
        return try run("revoke an application") { client in
            try await client.withTransaction(logger: logger) { connection -> Int in
                let consents = try await Self.count(connection.query("""
                    DELETE FROM oauth_consents WHERE account_id = \(id) AND client_id = \(clientID) RETURNING client_id
                    """, logger: logger))
                let grants = try await Self.count(connection.query("""
                    DELETE FROM oauth_grants WHERE account_id = \(id) AND client_id = \(clientID) RETURNING id
                    """, logger: logger))
                // Told only when there was something to withdraw.
                if consents + grants > 0 { for event in events { try await Self.enqueue(event, connection, logger) } }
                return grants
            }
        }
    }

    public func endGrantsOfEndedSessions(announcing announce: @escaping @Sendable (OpenIDGrant) -> OutboxEvent?) throws -> Int {
        let logger = self.logger
        return try run("end the grants of ended sessions") { client in
            try await client.withTransaction(logger: logger) { connection -> Int in
                var ended: [OpenIDGrant] = []
                for try await (id, client, account, scopes, session, authTime, methods, created, expires) in try await connection.query("""
                    DELETE FROM oauth_grants WHERE NOT EXISTS (SELECT 1 FROM sign_in_sessions WHERE public_id = oauth_grants.session_id)
                    RETURNING id, client_id, account_id, scopes, session_id, auth_time, methods, created_at, expires_at
                    """, logger: logger).decode((String, String, Int64, String, String, Date, String, Date, Date).self) {
                    ended.append(OpenIDGrant(id: id, clientID: client, accountID: account, scopes: Self.words(scopes), sessionID: session,
                                             authTime: authTime, methods: Self.words(methods), createdAt: created, expiresAt: expires))
                }
                for event in ended.compactMap(announce) { try await Self.enqueue(event, connection, logger) }
                return ended.count
            }
        }
    }

    // MARK: Rows

    private struct Found: Sendable {
        let grant: OpenIDGrant
        let isRefresh: Bool
    }

    /// Stores a redeemed code's or a rotated token's pair; the grant lives as long as its
    /// newest refresh token.
    private static func issue(_ tokens: TokenPair, grantID: String, _ connection: PostgresConnection, _ logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO oauth_tokens (token_hash, grant_id, kind, expires_at)
            VALUES (\(tokens.accessHash), \(grantID), 'access', \(tokens.accessExpiresAt)),
                   (\(tokens.refreshHash), \(grantID), 'refresh', \(tokens.refreshExpiresAt))
            """, logger: logger)
        try await connection.query("UPDATE oauth_grants SET expires_at = \(tokens.refreshExpiresAt) WHERE id = \(grantID)", logger: logger)
    }

    private static func grant(id: String, _ connection: PostgresConnection, _ logger: Logger) async throws -> OpenIDGrant? {
        for try await (id, client, account, scopes, session, authTime, methods, created, expires) in try await connection.query("""
            SELECT id, client_id, account_id, scopes, session_id, auth_time, methods, created_at, expires_at FROM oauth_grants
            WHERE id = \(id)
            """, logger: logger).decode((String, String, Int64, String, String, Date, String, Date, Date).self) {
            return OpenIDGrant(id: id, clientID: client, accountID: account, scopes: words(scopes), sessionID: session,
                               authTime: authTime, methods: words(methods), createdAt: created, expiresAt: expires)
        }
        return nil
    }

    private static func words(_ text: String) -> [String] { text.split(separator: " ").map(String.init) }
}
