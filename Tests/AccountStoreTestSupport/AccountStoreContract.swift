import Foundation
import SignupDomain
import XCTest

/// What every `AccountStore` engine promises, written once and run by each engine's tests
/// (`SQLiteAccountStoreTests`, `PostgresAccountStoreTests`) on a fresh, empty store.
/// `reopen` opens the same database again, as a restart or a second instance would.
public struct AccountStoreContract {
    public let store: any AccountStore
    public let reopen: () throws -> any AccountStore

    public init(store: any AccountStore, reopen: @escaping () throws -> any AccountStore) {
        self.store = store
        self.reopen = reopen
    }

    private static func newAccount(_ username: String, token: String = UUID().uuidString) -> NewAccount {
        NewAccount(username: username, email: "\(username.lowercased())@example.com",
                   passwordHash: "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA", formToken: token)
    }

    public func aFreshStoreHasNoNamesTaken(file: StaticString = #filePath, line: UInt = #line) throws {
        for name in ["alice", "admin", "root", "a"] {
            XCTAssertFalse(try store.isUsernameTaken(name), name, file: file, line: line)
        }
        XCTAssertEqual(try store.allAccounts(), [], file: file, line: line)
        XCTAssertNoThrow(try store.checkReadiness(), file: file, line: line)
    }

    /// Names are compared in canonical form (NFKC + case fold): Alice, ALICE and full-width
    /// Ａｌｉｃｅ are one name; alicia is another.
    public func namesAreTakenInCanonicalForm(file: StaticString = #filePath, line: UInt = #line) throws {
        try store.reserveUsernames(["Alice"])
        for taken in ["Alice", "alice", "ALICE", "ａｌｉｃｅ", "Ａｌｉｃｅ"] {
            XCTAssertTrue(try store.isUsernameTaken(taken), taken, file: file, line: line)
        }
        for free in ["alicia", "alice1", "alic"] {
            XCTAssertFalse(try store.isUsernameTaken(free), free, file: file, line: line)
        }
        XCTAssertThrowsError(try store.createAccount(Self.newAccount("ＡＬＩＣＥ")), file: file, line: line) { error in
            XCTAssertEqual(error as? AccountCreationError, .usernameTaken, file: file, line: line)
        }
    }

    public func reservingAgainSkipsNamesAlreadyThere(file: StaticString = #filePath, line: UInt = #line) throws {
        try store.reserveUsernames(["Alice"])
        XCTAssertNoThrow(try store.reserveUsernames(["ALICE", "alice", "Bob"]), file: file, line: line)
        XCTAssertTrue(try store.isUsernameTaken("bob"), "a duplicate in a batch does not abort it", file: file, line: line)
        XCTAssertFalse(try store.isUsernameTaken("carol"), file: file, line: line)
        let reserved = try store.allAccounts()
        XCTAssertEqual(reserved.map(\.username), ["Alice", "Bob"], file: file, line: line)
        XCTAssertTrue(reserved.allSatisfy { $0.passwordHash == Account.unusablePasswordHash }, file: file, line: line)
    }

    /// An account reads back as it was stored, by any spelling of its name, oldest first.
    public func accountsReadBackAsStored(file: StaticString = #filePath, line: UInt = #line) throws {
        let before = Date().addingTimeInterval(-60)
        let first = try store.createAccount(Self.newAccount("Zoë", token: "token-1"))
        let second = try store.createAccount(Self.newAccount("bob", token: "token-2"))
        XCTAssertEqual(first.username, "Zoë", file: file, line: line)
        XCTAssertEqual(first.email, "zoë@example.com", file: file, line: line)
        XCTAssertLessThan(first.id, second.id, file: file, line: line)
        XCTAssertGreaterThan(first.createdAt, before, file: file, line: line)
        XCTAssertEqual(try store.account(named: "ZOË"), first, file: file, line: line)
        XCTAssertEqual(try store.account(named: "Zoe\u{308}"), first, "a decomposed ë is the same name", file: file, line: line)
        XCTAssertNil(try store.account(named: "zoe"), file: file, line: line)
        XCTAssertEqual(try store.allAccounts(), [first, second], file: file, line: line)
        XCTAssertTrue(try store.isFormTokenUsed("token-1"), file: file, line: line)
        XCTAssertFalse(try store.isFormTokenUsed("token-3"), file: file, line: line)
        XCTAssertEqual(try reopen().allAccounts(), [first, second], "stored for good", file: file, line: line)
    }

    /// A form creates one account: its second submit is refused and stores nothing.
    public func aFormCreatesOneAccount(file: StaticString = #filePath, line: UInt = #line) throws {
        _ = try store.createAccount(Self.newAccount("first", token: "same-form"))
        XCTAssertThrowsError(try store.createAccount(Self.newAccount("second", token: "same-form")),
                             file: file, line: line) { error in
            XCTAssertEqual(error as? AccountCreationError, .formAlreadyUsed, file: file, line: line)
        }
        XCTAssertEqual(try store.allAccounts().map(\.username), ["first"], file: file, line: line)
    }

    /// Many submits of one name at once, from fresh forms and (through `reopen`) other
    /// connections: exactly one account, every other submit told the name is taken.
    public func raceForOneNameHasOneWinner(file: StaticString = #filePath, line: UInt = #line) throws {
        let other = try reopen()
        let store = self.store
        let outcomes = Outcomes()
        DispatchQueue.concurrentPerform(iterations: 16) { index in
            let target = index.isMultiple(of: 2) ? store : other
            do {
                _ = try target.createAccount(Self.newAccount(index.isMultiple(of: 3) ? "Racer" : "racer"))
                outcomes.add("created")
            } catch AccountCreationError.usernameTaken {
                outcomes.add("taken")
            } catch {
                outcomes.add("error: \(error)")
            }
        }
        XCTAssertEqual(outcomes.counts, ["created": 1, "taken": 15], file: file, line: line)
        XCTAssertEqual(try store.allAccounts().count, 1, file: file, line: line)
    }

    /// The first secret stored under a name is everyone's, across reopenings.
    public func aSecretIsCreatedOnceAndShared(file: StaticString = #filePath, line: UInt = #line) throws {
        let first = try store.secret(named: "key", createdBy: { [1, 2, 3] })
        let second = try reopen().secret(named: "key", createdBy: { [9, 9, 9] })
        XCTAssertEqual(first, [1, 2, 3], file: file, line: line)
        XCTAssertEqual(second, [1, 2, 3], file: file, line: line)
        XCTAssertEqual(try store.secret(named: "other", createdBy: { [7] }), [7], file: file, line: line)
    }

    /// The OpenID provider's signing keys (issue 56) are kept as stored, seen by a reopened
    /// store (another instance), never replaced by a key with the same id, and forgotten on
    /// request.
    public func signingKeysAreKeptSharedAndNeverReplaced(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let first = SigningKey(id: "k1", algorithm: "ES256", privateKeyPEM: "-----BEGIN PRIVATE KEY-----\none\n",
                               createdAt: now, signsFrom: now)
        let second = SigningKey(id: "k2", algorithm: "ES256", privateKeyPEM: "-----BEGIN PRIVATE KEY-----\ntwo\n",
                                createdAt: now.addingTimeInterval(60), signsFrom: now.addingTimeInterval(3600))
        XCTAssertEqual(try store.signingKeys(), [], file: file, line: line)
        try store.addSigningKey(first)
        try store.addSigningKey(second)
        XCTAssertEqual(try reopen().signingKeys().sorted { $0.id < $1.id }, [first, second], file: file, line: line)
        let impostor = SigningKey(id: "k1", algorithm: "ES256", privateKeyPEM: "other", createdAt: now, signsFrom: now)
        XCTAssertThrowsError(try store.addSigningKey(impostor), "an id is never replaced", file: file, line: line)
        XCTAssertEqual(try store.signingKeys().first { $0.id == "k1" }, first, file: file, line: line)
        try store.removeSigningKeys(ids: ["k1"])
        XCTAssertEqual(try store.signingKeys(), [second], file: file, line: line)
    }

    /// The OpenID provider's grants (issue 56): a code is redeemed once, by whichever instance
    /// asks first, and only when its redeemer matches; a second use, or a refresh token used
    /// twice, ends the whole grant; an account holds a bounded number of grants per client;
    /// consents widen, list and revoke with the grants.
    public func openIDGrantsAreSpentOnceAndRevokedByReuse(file: StaticString = #filePath, line: UInt = #line) throws {
        let account = try store.createAccount(Self.newAccount("Grace"))
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func grant(_ id: String, client: String = "wiki", at time: Date = now) -> OpenIDGrant {
            OpenIDGrant(id: id, clientID: client, accountID: account.id, scopes: ["openid", "email"], sessionID: "s1",
                        authTime: time, methods: ["pwd", "otp", "mfa"], createdAt: time, expiresAt: time.addingTimeInterval(660))
        }
        func code(_ hash: String, _ grant: OpenIDGrant) -> AuthorizationCode {
            AuthorizationCode(codeHash: hash, grant: grant, redirectURI: "https://wiki.example/cb", codeChallenge: "challenge",
                              nonce: "n-1", expiresAt: grant.createdAt.addingTimeInterval(60))
        }
        func pair(_ name: String, at time: Date = now) -> TokenPair {
            TokenPair(accessHash: "a-\(name)", accessExpiresAt: time.addingTimeInterval(600), refreshHash: "r-\(name)",
                      refreshExpiresAt: time.addingTimeInterval(86_400))
        }
        try store.storeAuthorizationCode(code("c1", grant("g1")), keepingAtMost: 20)
        // Another instance redeems it; the redeemer's check sees what was stored.
        let other = try reopen()
        XCTAssertEqual(try other.redeemAuthorizationCode(hash: "c1", at: now.addingTimeInterval(5), issuing: pair("1"), if: { _ in true }),
                       .redeemed(code("c1", grant("g1"))),
                       file: file, line: line)
        let live = try XCTUnwrap(try store.accessToken(hash: "a-1", at: now.addingTimeInterval(10)), file: file, line: line)
        XCTAssertEqual(live.grant.methods, ["pwd", "otp", "mfa"], file: file, line: line)
        XCTAssertEqual(live.grant.expiresAt, now.addingTimeInterval(86_400), "the grant lives as long as its refresh token",
                       file: file, line: line)
        XCTAssertNil(try store.accessToken(hash: "a-1", at: now.addingTimeInterval(601)), "expired", file: file, line: line)
        XCTAssertNil(try store.accessToken(hash: "r-1", at: now), "a refresh token is not an access token", file: file, line: line)
        XCTAssertEqual(try store.token(hash: "r-1", clientID: "wiki", at: now)?.isRefresh, true, file: file, line: line)
        XCTAssertNil(try store.token(hash: "r-1", clientID: "other", at: now), "another client's token", file: file, line: line)

        // The second use: nothing issued, the first use's tokens revoked.
        XCTAssertEqual(try store.redeemAuthorizationCode(hash: "c1", at: now.addingTimeInterval(6), issuing: pair("2"), if: { _ in true }),
                       .reused(grantID: "g1"), file: file, line: line)
        XCTAssertNil(try store.accessToken(hash: "a-1", at: now.addingTimeInterval(10)), file: file, line: line)
        XCTAssertNil(try store.accessToken(hash: "a-2", at: now.addingTimeInterval(10)), file: file, line: line)
        XCTAssertEqual(try store.redeemAuthorizationCode(hash: "nope", at: now, issuing: pair("3"), if: { _ in true }), .unknown,
                       file: file, line: line)

        // A redeemer that does not match spends the code and ends its grant, issuing nothing.
        try store.storeAuthorizationCode(code("c2", grant("g2")), keepingAtMost: 20)
        guard case .refused(let refused) = try store.redeemAuthorizationCode(hash: "c2", at: now, issuing: pair("4"), if: { _ in false })
        else { return XCTFail("a refused redeemer", file: file, line: line) }
        XCTAssertEqual(refused.redirectURI, "https://wiki.example/cb", file: file, line: line)
        XCTAssertNil(try store.accessToken(hash: "a-4", at: now), file: file, line: line)
        XCTAssertEqual(try store.redeemAuthorizationCode(hash: "c2", at: now, issuing: pair("5"), if: { _ in true }), .unknown,
                       file: file, line: line)
        // An expired code redeems nothing.
        try store.storeAuthorizationCode(code("c3", grant("g3")), keepingAtMost: 20)
        XCTAssertEqual(try store.redeemAuthorizationCode(hash: "c3", at: now.addingTimeInterval(61), issuing: pair("6"), if: { _ in true }),
                       .unknown, file: file, line: line)

        // Refresh rotation: once; a reuse ends the family, the rotated tokens included.
        try store.storeAuthorizationCode(code("c4", grant("g4")), keepingAtMost: 20)
        _ = try store.redeemAuthorizationCode(hash: "c4", at: now, issuing: pair("7"), if: { _ in true })
        XCTAssertEqual(try store.rotateRefreshToken(hash: "r-7", clientID: "other", at: now, issuing: pair("x")), .unknown,
                       "another client's refresh token", file: file, line: line)
        guard case .rotated(let rotated) = try other.rotateRefreshToken(hash: "r-7", clientID: "wiki", at: now, issuing: pair("8"))
        else { return XCTFail("rotated", file: file, line: line) }
        XCTAssertEqual(rotated.id, "g4", file: file, line: line)
        XCTAssertNotNil(try store.accessToken(hash: "a-8", at: now), file: file, line: line)
        XCTAssertEqual(try store.rotateRefreshToken(hash: "r-7", clientID: "wiki", at: now, issuing: pair("9")), .reused(grantID: "g4"),
                       file: file, line: line)
        XCTAssertNil(try store.accessToken(hash: "a-8", at: now), "the family is revoked", file: file, line: line)
        XCTAssertEqual(try store.rotateRefreshToken(hash: "r-8", clientID: "wiki", at: now, issuing: pair("10")), .unknown,
                       file: file, line: line)

        // Revocation: an access token alone, or a whole grant.
        try store.storeAuthorizationCode(code("c5", grant("g5")), keepingAtMost: 20)
        _ = try store.redeemAuthorizationCode(hash: "c5", at: now, issuing: pair("11"), if: { _ in true })
        try store.revokeAccessToken(hash: "a-11")
        XCTAssertNil(try store.accessToken(hash: "a-11", at: now), file: file, line: line)
        XCTAssertNotNil(try store.token(hash: "r-11", clientID: "wiki", at: now), file: file, line: line)
        XCTAssertTrue(try store.revokeGrant(id: "g5"), file: file, line: line)
        XCTAssertNil(try store.token(hash: "r-11", clientID: "wiki", at: now), file: file, line: line)
        XCTAssertFalse(try store.revokeGrant(id: "g5"), file: file, line: line)

        // At most `keep` grants of one account at one client: the oldest go.
        for index in 0..<4 {
            let time = now.addingTimeInterval(Double(index))
            try store.storeAuthorizationCode(code("k\(index)", grant("k\(index)", at: time)), keepingAtMost: 2)
            _ = try store.redeemAuthorizationCode(hash: "k\(index)", at: time, issuing: pair("k\(index)", at: time), if: { _ in true })
        }
        XCTAssertNil(try store.accessToken(hash: "a-k1", at: now), file: file, line: line)
        XCTAssertNotNil(try store.accessToken(hash: "a-k2", at: now), file: file, line: line)
        XCTAssertNotNil(try store.accessToken(hash: "a-k3", at: now), file: file, line: line)

        // Consents: recorded, widened, listed with the grants of clients without one, revoked
        // with their grants.
        try store.recordConsent(ofAccount: account.id, client: "blog", scopes: ["openid"], at: now, events: [])
        try store.recordConsent(ofAccount: account.id, client: "blog", scopes: ["openid", "email"], at: now.addingTimeInterval(9), events: [])
        XCTAssertEqual(try other.consent(ofAccount: account.id, client: "blog"),
                       ClientConsent(clientID: "blog", scopes: ["openid", "email"], grantedAt: now), file: file, line: line)
        XCTAssertEqual(try store.consents(ofAccount: account.id, at: now).map(\.clientID), ["blog", "wiki"], file: file, line: line)
        XCTAssertEqual(try store.revokeClient("wiki", ofAccount: account.id, events: []), 2, file: file, line: line)
        XCTAssertNil(try store.accessToken(hash: "a-k3", at: now), file: file, line: line)
        XCTAssertEqual(try store.consents(ofAccount: account.id, at: now).map(\.clientID), ["blog"], file: file, line: line)
        let removed = OutboxEvent(id: "msg_removed", type: "account.application_removed", body: "{}", createdAt: now)
        XCTAssertEqual(try store.revokeClient("blog", ofAccount: account.id, events: [removed]), 0, file: file, line: line)
        XCTAssertEqual(try store.revokeClient("blog", ofAccount: account.id, events: [
            OutboxEvent(id: "msg_nothing", type: "account.application_removed", body: "{}", createdAt: now)]), 0, file: file, line: line)
        XCTAssertEqual(try store.claimDueEvents(channel: .webhook, at: now.addingTimeInterval(1), limit: 10, lease: 30).map(\.event.id),
                       ["msg_removed"], "the withdrawal told with it; nothing to withdraw, nothing told", file: file, line: line)
        XCTAssertNil(try store.consent(ofAccount: account.id, client: "blog"), file: file, line: line)

        // The sweep forgets grants past their last token.
        try store.storeAuthorizationCode(code("c6", grant("g6")), keepingAtMost: 20)
        XCTAssertEqual(try store.removeExpiredGrants(at: now.addingTimeInterval(600)), 0, file: file, line: line)
        XCTAssertEqual(try store.removeExpiredGrants(at: now.addingTimeInterval(661)), 1, file: file, line: line)
    }

    /// A grant ends with the sign-in session it came through (issue 56), and the event that
    /// tells its application is written in the same transaction; a live session's grant stays.
    public func openIDGrantsEndWithTheirSession(file: StaticString = #filePath, line: UInt = #line) throws {
        let account = try store.createAccount(Self.newAccount("Hedy"))
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        try store.startSignInSession(NewSignInSession(idHash: "live-hash", accountID: account.id, createdAt: now,
                                                      expiresAt: now.addingTimeInterval(3600), publicID: "live-session"))
        for (grant, session) in [("kept", "live-session"), ("ended", "gone-session"), ("quiet", "gone-session")] {
            let stored = OpenIDGrant(id: grant, clientID: grant == "quiet" ? "no-backchannel" : "wiki", accountID: account.id,
                                     scopes: ["openid"], sessionID: session, authTime: now, methods: ["pwd"], createdAt: now,
                                     expiresAt: now.addingTimeInterval(86_400))
            try store.storeAuthorizationCode(AuthorizationCode(codeHash: "code-\(grant)", grant: stored, redirectURI: "https://w/cb",
                                                               codeChallenge: nil, nonce: nil, expiresAt: now.addingTimeInterval(60)),
                                             keepingAtMost: 20)
        }
        let ended = try store.endGrantsOfEndedSessions { grant in
            grant.clientID == "wiki"
                ? OutboxEvent(id: "msg_\(grant.id)", type: "openid.backchannel_logout", body: grant.sessionID, createdAt: now,
                              channel: .backchannelLogout)
                : nil
        }
        XCTAssertEqual(ended, 2, "both grants of the ended session", file: file, line: line)
        let events = try store.claimDueEvents(channel: .backchannelLogout, at: now.addingTimeInterval(1), limit: 10, lease: 30)
        XCTAssertEqual(events.map(\.event.id), ["msg_ended"], "one event, for the application that asked", file: file, line: line)
        XCTAssertEqual(events.first?.event.body, "gone-session", file: file, line: line)
        XCTAssertEqual(try store.redeemAuthorizationCode(hash: "code-ended", at: now, issuing: TokenPair(
            accessHash: "a", accessExpiresAt: now, refreshHash: "r", refreshExpiresAt: now), if: { _ in true }), .unknown,
                       "its code went with it", file: file, line: line)
        XCTAssertEqual(try store.endGrantsOfEndedSessions { _ in nil }, 0, "the live session's grant stays", file: file, line: line)
        try store.endSignInSession(idHash: "live-hash")
        XCTAssertEqual(try reopen().endGrantsOfEndedSessions { _ in nil }, 1, "until its session ends", file: file, line: line)
    }

    /// Opening an existing database again (a restart, a newer version) migrates nothing twice
    /// and keeps what is there.
    public func reopeningKeepsTheData(file: StaticString = #filePath, line: UInt = #line) throws {
        try store.reserveUsernames(["Alice", "bob"])
        let reopened = try reopen()
        XCTAssertTrue(try reopened.isUsernameTaken("alice"), file: file, line: line)
        try reopened.reserveUsernames(["carol"])
        XCTAssertTrue(try reopen().isUsernameTaken("Carol"), file: file, line: line)
        XCTAssertTrue(try store.isUsernameTaken("CAROL"), file: file, line: line)
    }

    /// A signed-in session: found by its id's hash only while live (before its expiry, used
    /// within the idle timeout, the use written at most once a touch interval), seen by any
    /// instance, ended one at a time or all of an account's at once, and swept when over.
    public func signedInSessionsLiveEndAndAreSwept(file: StaticString = #filePath, line: UInt = #line) throws {
        let ada = try store.createAccount(Self.newAccount("Ada", token: "session-1"))
        let bob = try store.createAccount(Self.newAccount("bob", token: "session-2"))
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let rules = SignInSessionRules(idleTimeout: 3600, touchInterval: 60)
        let adaID = SignInSessionID.make(), adaOther = SignInSessionID.make(), bobID = SignInSessionID.make()
        XCTAssertNotEqual(adaID, adaOther, file: file, line: line)
        XCTAssertEqual(SignInSessionID.hash(adaID).count, 64, "SHA-256 in hex", file: file, line: line)
        for (id, account, days) in [(adaID, ada, 7.0), (adaOther, ada, 7.0), (bobID, bob, 1.0)] {
            try store.startSignInSession(NewSignInSession(idHash: SignInSessionID.hash(id), accountID: account.id,
                                                          createdAt: start, expiresAt: start.addingTimeInterval(days * 86_400)))
        }
        let found = try reopen().signedInAccount(idHash: SignInSessionID.hash(adaID), at: start.addingTimeInterval(600), rules: rules)
        XCTAssertEqual(found?.username, "Ada", "another instance finds it", file: file, line: line)
        XCTAssertNil(try store.signedInAccount(idHash: adaID, at: start, rules: rules),
                     "the id itself is not what is stored", file: file, line: line)
        // Used at +10 min (written), so alive at +10 min + 59 min; idle past an hour after that.
        XCTAssertNotNil(try store.signedInAccount(idHash: SignInSessionID.hash(adaID), at: start.addingTimeInterval(600 + 3540), rules: rules),
                        "the use at +10 min was written", file: file, line: line)
        XCTAssertNil(try store.signedInAccount(idHash: SignInSessionID.hash(adaOther), at: start.addingTimeInterval(3601), rules: rules),
                     "idle past the timeout", file: file, line: line)
        XCTAssertNil(try store.signedInAccount(idHash: SignInSessionID.hash(bobID), at: start.addingTimeInterval(86_401),
                                               rules: SignInSessionRules(idleTimeout: 10 * 86_400)),
                     "past its lifetime however recently used", file: file, line: line)

        try store.endSignInSession(idHash: SignInSessionID.hash(bobID))
        XCTAssertNoThrow(try store.endSignInSession(idHash: SignInSessionID.hash(bobID)), "ending it twice is fine", file: file, line: line)
        XCTAssertNil(try store.signedInAccount(idHash: SignInSessionID.hash(bobID), at: start, rules: rules), file: file, line: line)
        XCTAssertEqual(try store.endSignInSessions(username: "ADA"), 2, "every session of the account, by any spelling",
                       file: file, line: line)
        XCTAssertNil(try store.signedInAccount(idHash: SignInSessionID.hash(adaID), at: start.addingTimeInterval(700), rules: rules),
                     file: file, line: line)

        let fresh = SignInSessionID.make(), stale = SignInSessionID.make()
        try store.startSignInSession(NewSignInSession(idHash: SignInSessionID.hash(fresh), accountID: bob.id,
                                                      createdAt: start, expiresAt: start.addingTimeInterval(86_400)))
        try store.startSignInSession(NewSignInSession(idHash: SignInSessionID.hash(stale), accountID: bob.id,
                                                      createdAt: start.addingTimeInterval(-7200), expiresAt: start.addingTimeInterval(86_400)))
        XCTAssertEqual(try store.removeEndedSignInSessions(at: start.addingTimeInterval(60), rules: rules), 1,
                       "the idle one is swept, the fresh one stays", file: file, line: line)
        XCTAssertNotNil(try store.signedInAccount(idHash: SignInSessionID.hash(fresh), at: start.addingTimeInterval(60), rules: rules),
                        file: file, line: line)
    }

    /// A shared token bucket: every opening of the store (every instance) spends from the same
    /// tokens, which refill at their rate; a reset fills it; full ones are swept.
    public func sharedBucketsAreSharedRefillAndAreSwept(file: StaticString = #filePath, line: UInt = #line) throws {
        let rate = SharedBucketRate(perSecond: 1.0 / 60, burst: 3)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let other = try reopen()
        XCTAssertEqual(try store.spendSharedTokens(bucket: "b", key: "ada", cost: 0, rate: rate, at: start), 3,
                       "a bucket without a row is full", file: file, line: line)
        for (index, instance) in [store, other, store].enumerated() {
            XCTAssertEqual(try instance.spendSharedTokens(bucket: "b", key: "ada", cost: 1, rate: rate, at: start), Double(3 - index),
                           "spent from the same tokens by either instance", file: file, line: line)
        }
        XCTAssertEqual(try other.spendSharedTokens(bucket: "b", key: "ada", cost: 1, rate: rate, at: start), 0,
                       "empty: nothing spent", file: file, line: line)
        XCTAssertEqual(try store.spendSharedTokens(bucket: "b", key: "ada", cost: 0, rate: rate, at: start.addingTimeInterval(90)),
                       1.5, accuracy: 0.001, "refilled at its rate", file: file, line: line)
        XCTAssertEqual(try store.spendSharedTokens(bucket: "b", key: "bob", cost: 1, rate: rate, at: start), 3,
                       "each key its own bucket", file: file, line: line)
        XCTAssertEqual(try store.spendSharedTokens(bucket: "other", key: "ada", cost: 0, rate: rate, at: start), 3,
                       "each bucket its own keys", file: file, line: line)
        try other.resetSharedTokens(bucket: "b", key: "ada")
        XCTAssertEqual(try store.spendSharedTokens(bucket: "b", key: "ada", cost: 0, rate: rate, at: start), 3, file: file, line: line)
        // bob spent 1 at start: full again a minute later.
        XCTAssertEqual(try store.removeFullSharedBuckets(at: start.addingTimeInterval(59)), 0, file: file, line: line)
        XCTAssertEqual(try store.removeFullSharedBuckets(at: start.addingTimeInterval(60)), 1, file: file, line: line)
    }

    /// An announced account writes its `account.created` event in the same transaction (a
    /// refused account writes none); events are claimed by one instance at a time for a lease,
    /// then delivered, retried or parked.
    public func theOutboxHoldsEachAccountsEventUntilItIsDelivered(file: StaticString = #filePath, line: UInt = #line) throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        _ = try store.createAccount(NewAccount(username: "quiet", email: "q@example.org", passwordHash: "x", formToken: "o-0"))
        let ada = try store.createAccount(NewAccount(username: "Adalovelace", email: "ada@example.org", passwordHash: "x",
                                                     formToken: "o-1", profile: ["display_name": .string("Ada")], announce: true))
        XCTAssertThrowsError(try store.createAccount(NewAccount(username: "ADALOVELACE", email: "b@example.org", passwordHash: "x",
                                                                formToken: "o-2", announce: true)), file: file, line: line)
        let far = start.addingTimeInterval(10 * 365 * 86_400)
        XCTAssertEqual(try store.outboxStatus(channel: .webhook).pending, 1, "one event: not for the quiet one, not for the refused one",
                       file: file, line: line)
        let claimed = try store.claimDueEvents(channel: .webhook, at: far, limit: 10, lease: 30)
        XCTAssertEqual(claimed.count, 1, file: file, line: line)
        let event = try XCTUnwrap(claimed.first?.event, file: file, line: line)
        XCTAssertEqual(event.type, "account.created", file: file, line: line)
        XCTAssertTrue(event.id.hasPrefix("msg_"), file: file, line: line)
        let body = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(event.body.utf8)) as? [String: Any], file: file, line: line)
        let data = try XCTUnwrap(body["data"] as? [String: Any], file: file, line: line)
        XCTAssertEqual(data["id"] as? String, String(ada.id), file: file, line: line)
        XCTAssertEqual(data["username"] as? String, "Adalovelace", file: file, line: line)
        XCTAssertEqual((data["profile"] as? [String: Any])?["display_name"] as? String, "Ada", file: file, line: line)
        XCTAssertNil(data["password_hash"], file: file, line: line)

        XCTAssertEqual(try reopen().claimDueEvents(channel: .webhook, at: far.addingTimeInterval(29), limit: 10, lease: 30), [],
                       "leased: no other instance claims it", file: file, line: line)
        try store.scheduleRetry(eventID: event.id, attempts: 1, at: far.addingTimeInterval(60), error: "503")
        XCTAssertEqual(try store.claimDueEvents(channel: .webhook, at: far.addingTimeInterval(59), limit: 10, lease: 30), [], file: file, line: line)
        let again = try reopen().claimDueEvents(channel: .webhook, at: far.addingTimeInterval(60), limit: 10, lease: 30)
        XCTAssertEqual(again.map(\.event.id), [event.id], "due again, same id", file: file, line: line)
        XCTAssertEqual(again.first?.attempts, 1, file: file, line: line)
        try store.markDelivered(eventID: event.id, attempts: 2, at: far.addingTimeInterval(61))
        XCTAssertEqual(try store.outboxStatus(channel: .webhook), OutboxStatus(pending: 0, parked: 0, oldestPendingCreatedAt: nil), file: file, line: line)
        XCTAssertEqual(try store.claimDueEvents(channel: .webhook, at: far.addingTimeInterval(10_000), limit: 10, lease: 30), [],
                       "delivered: never again", file: file, line: line)
        XCTAssertEqual(try store.removeDeliveredEvents(deliveredBefore: far.addingTimeInterval(61)), 0, file: file, line: line)
        XCTAssertEqual(try store.removeDeliveredEvents(deliveredBefore: far.addingTimeInterval(62)), 1,
                       "the sweep deletes delivered events older than its bound", file: file, line: line)

        let bob = try store.createAccount(NewAccount(username: "bobbytables", email: "b@example.org", passwordHash: "x",
                                                     formToken: "o-3", announce: true))
        let parked = try XCTUnwrap(try store.claimDueEvents(channel: .webhook, at: far, limit: 10, lease: 30).first, file: file, line: line)
        try store.park(eventID: parked.event.id, attempts: 1, error: "410 Gone")
        XCTAssertEqual(try store.outboxStatus(channel: .webhook).parked, 1, file: file, line: line)
        XCTAssertEqual(try store.claimDueEvents(channel: .webhook, at: far.addingTimeInterval(10_000), limit: 10, lease: 30), [], file: file, line: line)
        _ = bob
    }

    /// Passkeys belong to their account: found by credential id, listed per account, unique,
    /// their counter written only when it grows (one of two racing sign-ins wins); each account
    /// has one random user handle, made once.
    public func passkeysBelongToTheirAccounts(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let ada = try store.createAccount(Self.newAccount("ada_passkeys"))
        let bob = try store.createAccount(Self.newAccount("bob_passkeys"))
        let handle = try store.userHandle(ofAccount: ada.id)
        XCTAssertEqual(handle.count, 32, file: file, line: line)
        XCTAssertEqual(try store.userHandle(ofAccount: ada.id), handle, "made once", file: file, line: line)
        XCTAssertNotEqual(try store.userHandle(ofAccount: bob.id), handle, file: file, line: line)
        XCTAssertEqual(try store.account(withUserHandle: handle)?.id, ada.id, file: file, line: line)
        XCTAssertNil(try store.account(withUserHandle: [1, 2, 3]), file: file, line: line)
        XCTAssertThrowsError(try store.userHandle(ofAccount: 999_999), file: file, line: line) {
            XCTAssertEqual($0 as? PasskeyError, .unknownAccount, file: file, line: line)
        }

        let key = Passkey(credentialID: [0xCA, 0xFE], accountID: ada.id, publicKey: [0xA5, 0x01, 0x02], algorithm: -7,
                          signCount: 4, transports: ["internal", "hybrid"], isBackupEligible: true, isBackedUp: false,
                          createdAt: now)
        try store.addPasskey(key)
        XCTAssertEqual(try store.passkey(credentialID: [0xCA, 0xFE]), key, file: file, line: line)
        XCTAssertEqual(try store.passkeys(ofAccount: ada.id), [key], file: file, line: line)
        XCTAssertEqual(try store.passkeys(ofAccount: bob.id), [], file: file, line: line)
        let stolen = Passkey(credentialID: [0xCA, 0xFE], accountID: bob.id, publicKey: [0x00], algorithm: -8, signCount: 0,
                             transports: [], isBackupEligible: false, isBackedUp: false, createdAt: now)
        XCTAssertThrowsError(try store.addPasskey(stolen), "a credential id is one account's", file: file, line: line) {
            XCTAssertEqual($0 as? PasskeyError, .credentialExists, file: file, line: line)
        }
        let orphan = Passkey(credentialID: [0x01], accountID: 999_999, publicKey: [0x00], algorithm: -7, signCount: 0,
                             transports: [], isBackupEligible: false, isBackedUp: false, createdAt: now)
        XCTAssertThrowsError(try store.addPasskey(orphan), file: file, line: line) {
            XCTAssertEqual($0 as? PasskeyError, .unknownAccount, file: file, line: line)
        }

        XCTAssertFalse(try store.recordPasskeyUse(credentialID: [0xCA, 0xFE], signCount: 4, isBackedUp: true, at: now),
                       "a counter that did not grow", file: file, line: line)
        let store = self.store
        let wins = Outcomes()
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            let won = (try? store.recordPasskeyUse(credentialID: [0xCA, 0xFE], signCount: 5, isBackedUp: true,
                                                   at: now.addingTimeInterval(60))) == true
            wins.add(won ? "won" : "lost")
        }
        XCTAssertEqual(wins.counts, ["won": 1, "lost": 5], "one of racing sign-ins with one counter", file: file, line: line)
        let used = try XCTUnwrap(try store.passkey(credentialID: [0xCA, 0xFE]), file: file, line: line)
        XCTAssertEqual(used.signCount, 5, file: file, line: line)
        XCTAssertTrue(used.isBackedUp, file: file, line: line)
        XCTAssertEqual(used.lastUsedAt, now.addingTimeInterval(60), file: file, line: line)

        let uncounted = Passkey(credentialID: [0xBE, 0xEF], accountID: bob.id, publicKey: [0x00], algorithm: -8, signCount: 0,
                                transports: ["usb"], isBackupEligible: false, isBackedUp: false, createdAt: now)
        try store.addPasskey(uncounted)
        XCTAssertTrue(try store.recordPasskeyUse(credentialID: [0xBE, 0xEF], signCount: 0, isBackedUp: false, at: now),
                      "an authenticator that keeps no counter", file: file, line: line)
        XCTAssertTrue(try store.recordPasskeyUse(credentialID: [0xBE, 0xEF], signCount: 0, isBackedUp: false, at: now),
                      file: file, line: line)
    }

    /// A passkey made on the sign-up form arrives with its account, in one transaction: the
    /// account takes the user handle it was made for; a credential id already stored refuses
    /// the whole account (no account without its passkey); a pending sign-up keeps its passkey
    /// until the address is proved.
    public func signUpPasskeysArriveWithTheirAccounts(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func made(_ id: [UInt8], handle: UInt8) -> NewPasskey {
            NewPasskey(credentialID: id, publicKey: [0xA5, 0x01, 0x02, handle], algorithm: -7, signCount: 0,
                       transports: ["internal"], isBackupEligible: true, isBackedUp: true,
                       userHandle: Array(repeating: handle, count: 32), createdAt: now)
        }
        let passkey = made([0x51, 0x01], handle: 7)
        let ada = try store.createAccount(NewAccount(username: "ada_signup_passkey", email: "ada@example.org",
                                                     passwordHash: Account.unusablePasswordHash, formToken: UUID().uuidString,
                                                     passkey: passkey))
        XCTAssertEqual(ada.passwordHash, Account.unusablePasswordHash, file: file, line: line)
        XCTAssertEqual(try store.passkeys(ofAccount: ada.id), [passkey.passkey(accountID: ada.id)], file: file, line: line)
        XCTAssertEqual(try store.userHandle(ofAccount: ada.id), passkey.userHandle, "the handle it was made for",
                       file: file, line: line)
        XCTAssertEqual(try store.account(withUserHandle: passkey.userHandle)?.id, ada.id, file: file, line: line)

        let copy = made([0x51, 0x01], handle: 8)
        XCTAssertThrowsError(try store.createAccount(NewAccount(
            username: "eve_copies", email: "eve@example.org", passwordHash: Account.unusablePasswordHash,
            formToken: UUID().uuidString, passkey: copy)), "a credential id is one account's", file: file, line: line) {
            XCTAssertEqual($0 as? PasskeyError, .credentialExists, file: file, line: line)
        }
        XCTAssertFalse(try store.isUsernameTaken("eve_copies", at: now), "no account without its passkey", file: file, line: line)

        let waiting = made([0x51, 0x02], handle: 9)
        let pending = PendingSignup.starting(formToken: "pk-1", username: "bob_waits", email: "bob@example.org",
                                             passwordHash: Account.unusablePasswordHash, profile: [:], language: "en",
                                             returnTo: "", codeHash: "c", linkHash: "l-pk-1", at: now, lifetime: 1800,
                                             passkey: waiting)
        try store.startPendingSignup(pending, mail: Self.mail(at: now), at: now)
        XCTAssertEqual(try store.pendingSignup(formToken: "pk-1", at: now)?.passkey, waiting, file: file, line: line)
        XCTAssertNil(try store.passkey(credentialID: waiting.credentialID), "not before the proof", file: file, line: line)
        let bob = try XCTUnwrap(try store.completePendingSignup(formToken: "pk-1", at: now.addingTimeInterval(60), announce: false),
                                file: file, line: line)
        XCTAssertEqual(try store.passkeys(ofAccount: bob.id), [waiting.passkey(accountID: bob.id)], file: file, line: line)
        XCTAssertEqual(try store.account(withUserHandle: waiting.userHandle)?.id, bob.id, file: file, line: line)
    }

    /// A proof of work is spent once, whichever instance (here: thread) tries first, and is
    /// forgotten only when its challenge has expired anyway.
    public func aProofOfWorkIsSpentOnce(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let results = Outcomes()
        let store = self.store
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            results.add((try? store.spendProof("c0ffee", until: now.addingTimeInterval(300))) == true ? "spent" : "refused")
        }
        XCTAssertEqual(results.counts, ["spent": 1, "refused": 7], file: file, line: line)
        XCTAssertTrue(try store.spendProof("another", until: now.addingTimeInterval(600)), file: file, line: line)
        XCTAssertEqual(try store.removeExpiredProofs(at: now.addingTimeInterval(299)), 0, file: file, line: line)
        XCTAssertEqual(try store.removeExpiredProofs(at: now.addingTimeInterval(300)), 1, file: file, line: line)
        XCTAssertFalse(try store.spendProof("another", until: now.addingTimeInterval(600)), "still spent", file: file, line: line)
    }

    private static func pending(_ username: String, email: String, token: String, at now: Date,
                                code: String = "c-hash", link: String = UUID().uuidString) -> PendingSignup {
        PendingSignup.starting(formToken: token, username: username, email: email, passwordHash: "x", profile: ["plan": .string("pro")],
                               language: "de", returnTo: "https://app.example.org/", codeHash: code, linkHash: link,
                               at: now, lifetime: 1800)
    }

    private static func mail(at now: Date) -> OutboxEvent {
        OutboxEvent(id: OutboxEvent.makeID(), type: "mail.verification", body: "sealed", createdAt: now, channel: .mail)
    }

    /// A pending sign-up holds its username (for another form, and only until it expires)
    /// without an account row; it is found by its form or its link; wrong codes are counted;
    /// a new code replaces the old hashes; completing it makes the account once, with its
    /// address proved and unique; its mail is on the mail channel only.
    public func pendingSignUpsHoldNamesUntilProvedOrExpired(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        try store.startPendingSignup(Self.pending("Held_Name", email: "Ada@Example.org", token: "p-1", at: now, link: "link-1"),
                                     mail: Self.mail(at: now), at: now)
        XCTAssertNil(try store.account(named: "held_name"), "no account before the proof", file: file, line: line)
        XCTAssertTrue(try store.isUsernameTaken("HELD_NAME", at: now.addingTimeInterval(1799)), "held", file: file, line: line)
        XCTAssertFalse(try store.isUsernameTaken("held_name", at: now.addingTimeInterval(1800)), "released at expiry", file: file, line: line)
        XCTAssertThrowsError(try store.startPendingSignup(Self.pending("held_name", email: "b@example.org", token: "p-2", at: now),
                                                          mail: Self.mail(at: now), at: now.addingTimeInterval(60)),
                             file: file, line: line) {
            XCTAssertEqual($0 as? AccountCreationError, .usernameTaken, file: file, line: line)
        }
        XCTAssertEqual(try store.outboxStatus(channel: .mail).pending, 1, "the refused one wrote no mail", file: file, line: line)
        XCTAssertEqual(try store.outboxStatus(channel: .webhook).pending, 0, file: file, line: line)
        XCTAssertEqual(try reopen().claimDueEvents(channel: .mail, at: now, limit: 10, lease: 30).first?.event.channel, .mail,
                       file: file, line: line)

        let found = try XCTUnwrap(try reopen().pendingSignup(formToken: "p-1", at: now.addingTimeInterval(10)), file: file, line: line)
        XCTAssertEqual(found.username, "Held_Name", file: file, line: line)
        XCTAssertEqual(found.profile, ["plan": .string("pro")], file: file, line: line)
        XCTAssertEqual(found.language, "de", file: file, line: line)
        XCTAssertEqual(try store.pendingSignup(linkHash: "link-1", at: now)?.formToken, "p-1", file: file, line: line)
        XCTAssertNil(try store.pendingSignup(formToken: "p-1", at: now.addingTimeInterval(1800)), "expired", file: file, line: line)
        XCTAssertEqual(try store.spendCodeTry(formToken: "p-1", maximum: 3), 1, file: file, line: line)
        XCTAssertEqual(try store.spendCodeTry(formToken: "p-1", maximum: 3), 2, file: file, line: line)
        XCTAssertEqual(try store.spendCodeTry(formToken: "p-1", maximum: 3), 3, file: file, line: line)
        XCTAssertNil(try store.spendCodeTry(formToken: "p-1", maximum: 3), "none left", file: file, line: line)
        XCTAssertNil(try store.spendCodeTry(formToken: "nobody", maximum: 3), file: file, line: line)

        let later = now.addingTimeInterval(600)
        XCTAssertTrue(try store.replaceCode(formToken: "p-1", codeHash: "c-2", linkHash: "link-2", sentAt: later,
                                            expiresAt: later.addingTimeInterval(1800), mail: Self.mail(at: later)), file: file, line: line)
        let renewed = try XCTUnwrap(try store.pendingSignup(formToken: "p-1", at: later), file: file, line: line)
        XCTAssertEqual([renewed.codeHash, renewed.linkHash], ["c-2", "link-2"], file: file, line: line)
        XCTAssertEqual([renewed.wrongTries, renewed.codesSent], [0, 2], file: file, line: line)
        XCTAssertNil(try store.pendingSignup(linkHash: "link-1", at: later), "the old link stopped working", file: file, line: line)
        XCTAssertTrue(try store.isUsernameTaken("held_name", at: now.addingTimeInterval(1900)), "the hold moved with the new code",
                      file: file, line: line)
        XCTAssertFalse(try store.replaceCode(formToken: "gone", codeHash: "c", linkHash: "l", sentAt: later, expiresAt: later,
                                             mail: Self.mail(at: later)), file: file, line: line)
        XCTAssertEqual(try store.outboxStatus(channel: .mail).pending, 2, file: file, line: line)

        XCTAssertFalse(try store.isEmailTaken("ada@example.org"), file: file, line: line)
        let account = try XCTUnwrap(try store.completePendingSignup(formToken: "p-1", at: later, announce: true), file: file, line: line)
        XCTAssertEqual(account.username, "Held_Name", file: file, line: line)
        XCTAssertNotNil(account.emailVerifiedAt, file: file, line: line)
        XCTAssertEqual(account.profile, ["plan": .string("pro")], file: file, line: line)
        XCTAssertNil(try store.completePendingSignup(formToken: "p-1", at: later, announce: true), "once", file: file, line: line)
        XCTAssertTrue(try reopen().isEmailTaken("ADA@example.ORG"), "proved addresses compare without case", file: file, line: line)
        XCTAssertTrue(try store.isFormTokenUsed("p-1"), file: file, line: line)
        XCTAssertEqual(try store.outboxStatus(channel: .webhook).pending, 1, "account.created, in the same transaction",
                       file: file, line: line)

        // Two sign-ups proving the same address: the second finds it taken and is dropped.
        try store.startPendingSignup(Self.pending("second_one", email: "ADA@example.org", token: "p-3", at: later),
                                     mail: Self.mail(at: later), at: later)
        XCTAssertThrowsError(try store.completePendingSignup(formToken: "p-3", at: later, announce: false), file: file, line: line) {
            XCTAssertEqual($0 as? AccountCreationError, .emailTaken, file: file, line: line)
        }
        XCTAssertNil(try store.pendingSignup(formToken: "p-3", at: later), file: file, line: line)
        XCTAssertFalse(try store.isUsernameTaken("second_one", at: later), file: file, line: line)

        // Cancelling releases the name; the sweep deletes what expired.
        try store.startPendingSignup(Self.pending("changes_mind", email: "c@example.org", token: "p-4", at: later),
                                     mail: Self.mail(at: later), at: later)
        try store.cancelPendingSignup(formToken: "p-4")
        XCTAssertFalse(try store.isUsernameTaken("changes_mind", at: later), file: file, line: line)
        try store.startPendingSignup(Self.pending("expires", email: "e@example.org", token: "p-5", at: later),
                                     mail: Self.mail(at: later), at: later)
        XCTAssertEqual(try store.removeExpiredPendingSignups(at: later.addingTimeInterval(1799)), 0, file: file, line: line)
        XCTAssertEqual(try store.removeExpiredPendingSignups(at: later.addingTimeInterval(1800)), 1, file: file, line: line)
        // An account on an address nobody proved does not make it taken.
        _ = try store.createAccount(NewAccount(username: "unproved", email: "u@example.org", passwordHash: "x", formToken: "p-6"))
        XCTAssertFalse(try store.isEmailTaken("u@example.org"), file: file, line: line)
    }
}

extension AccountStoreContract {
    private static func recovery(_ token: String, account: Int64?, link: String, at now: Date) -> AccountRecovery {
        AccountRecovery(token: token, accountID: account, codeHash: "code-\(token)", linkHash: link, language: "de",
                        expiresAt: now.addingTimeInterval(900), createdAt: now)
    }

    /// A recovery is found by its token or its link until it expires; wrong codes are spent
    /// atomically up to the maximum; a new one voids the account's old one; a right code
    /// swaps the code for a new link; completing it works once, stores the new hash, ends
    /// every signed-in session of that account (and no other) and writes its events in the
    /// same transaction; a stand-in (no account) can never complete.
    public func recoveriesWorkOnceAndEndTheAccountsSessions(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let owner = try store.createAccount(NewAccount(username: "Forgetful", email: "f@example.org", passwordHash: "old-hash",
                                                       formToken: "r-form-1"))
        let other = try store.createAccount(NewAccount(username: "Bystander", email: "b@example.org", passwordHash: "b-hash",
                                                       formToken: "r-form-2"))
        XCTAssertEqual(try store.account(id: owner.id)?.username, "Forgetful", file: file, line: line)
        XCTAssertNil(try store.account(id: 987_654), file: file, line: line)
        let rules = SignInSessionRules(idleTimeout: 3600)
        for (hash, account) in [("s-owner-1", owner), ("s-owner-2", owner), ("s-other", other)] {
            try store.startSignInSession(NewSignInSession(idHash: hash, accountID: account.id, createdAt: now,
                                                          expiresAt: now.addingTimeInterval(86_400)))
        }

        try store.startRecovery(Self.recovery("t-1", account: owner.id, link: "link-1", at: now), mail: Self.mail(at: now))
        XCTAssertEqual(try store.outboxStatus(channel: .mail).pending, 1, "the code's mail, with it", file: file, line: line)
        let found = try XCTUnwrap(try reopen().recovery(token: "t-1", at: now.addingTimeInterval(899)), file: file, line: line)
        XCTAssertEqual([found.accountID], [owner.id], file: file, line: line)
        XCTAssertEqual([found.codeHash, found.linkHash, found.language], ["code-t-1", "link-1", "de"], file: file, line: line)
        XCTAssertEqual(try store.recovery(linkHash: "link-1", at: now)?.token, "t-1", file: file, line: line)
        XCTAssertNil(try store.recovery(token: "t-1", at: now.addingTimeInterval(900)), "expired", file: file, line: line)
        XCTAssertEqual(try store.spendRecoveryTry(token: "t-1", maximum: 2, at: now), 1, file: file, line: line)
        XCTAssertEqual(try store.spendRecoveryTry(token: "t-1", maximum: 2, at: now), 2, file: file, line: line)
        XCTAssertNil(try store.spendRecoveryTry(token: "t-1", maximum: 2, at: now), "none left", file: file, line: line)
        XCTAssertNil(try store.spendRecoveryTry(token: "nobody", maximum: 2, at: now), file: file, line: line)

        // A new one voids the old one.
        try store.startRecovery(Self.recovery("t-2", account: owner.id, link: "link-2", at: now), mail: Self.mail(at: now))
        XCTAssertNil(try store.recovery(token: "t-1", at: now), file: file, line: line)
        XCTAssertNil(try store.recovery(linkHash: "link-1", at: now), file: file, line: line)
        XCTAssertNil(try store.completeRecovery(linkHash: "link-1", passwordHash: "stolen", at: now, events: { _ in [] }),
                     "the old link is void", file: file, line: line)

        // A right code: the code is spent, a new secret opens the form.
        XCTAssertTrue(try store.exchangeRecoveryCode(token: "t-2", linkHash: "opened-2", at: now), file: file, line: line)
        XCTAssertEqual(try store.recovery(token: "t-2", at: now)?.codeHash, "", file: file, line: line)
        XCTAssertNil(try store.recovery(linkHash: "link-2", at: now), file: file, line: line)
        XCTAssertFalse(try store.exchangeRecoveryCode(token: "gone", linkHash: "x", at: now), file: file, line: line)
        XCTAssertNil(try store.completeRecovery(linkHash: "opened-2", passwordHash: "late", at: now.addingTimeInterval(900),
                                                events: { _ in [] }), "expired", file: file, line: line)

        let completed = try XCTUnwrap(try store.completeRecovery(
            linkHash: "opened-2", passwordHash: "new-hash", at: now.addingTimeInterval(60),
            events: { [OutboxEvent.passwordReset($0, at: now)] }), file: file, line: line)
        XCTAssertEqual(completed.account.passwordHash, "new-hash", file: file, line: line)
        XCTAssertEqual(completed.endedSessions, 2, file: file, line: line)
        XCTAssertEqual(try reopen().account(named: "forgetful")?.passwordHash, "new-hash", file: file, line: line)
        XCTAssertNil(try store.signedInAccount(idHash: "s-owner-1", at: now, rules: rules), file: file, line: line)
        XCTAssertNil(try store.signedInAccount(idHash: "s-owner-2", at: now, rules: rules), file: file, line: line)
        XCTAssertEqual(try store.signedInAccount(idHash: "s-other", at: now, rules: rules)?.username, "Bystander",
                       "another account's session is untouched", file: file, line: line)
        XCTAssertEqual(try store.account(named: "bystander")?.passwordHash, "b-hash", file: file, line: line)
        XCTAssertEqual(try store.claimDueEvents(channel: .webhook, at: now, limit: 10, lease: 30).map(\.event.type),
                       ["account.password_reset"], file: file, line: line)
        XCTAssertNil(try store.completeRecovery(linkHash: "opened-2", passwordHash: "again", at: now, events: { _ in [] }),
                     "once", file: file, line: line)
        XCTAssertEqual(try store.account(named: "forgetful")?.passwordHash, "new-hash", file: file, line: line)

        // A stand-in looks like any other recovery and can never complete.
        try store.startRecovery(Self.recovery("t-3", account: nil, link: "link-3", at: now), mail: nil)
        XCTAssertNotNil(try store.recovery(token: "t-3", at: now), file: file, line: line)
        XCTAssertEqual(try store.spendRecoveryTry(token: "t-3", maximum: 5, at: now), 1, file: file, line: line)
        XCTAssertNil(try store.completeRecovery(linkHash: "link-3", passwordHash: "x", at: now, events: { _ in [] }),
                     file: file, line: line)
        try store.startRecovery(Self.recovery("t-4", account: nil, link: "link-4", at: now), mail: nil)
        XCTAssertNotNil(try store.recovery(token: "t-3", at: now), "stand-ins void nothing", file: file, line: line)

        // Proved addresses find their account; unproved ones do not.
        XCTAssertNil(try store.account(withProvedEmail: "f@example.org"), "made without a proof", file: file, line: line)
        try store.startPendingSignup(Self.pending("Proved", email: "Proved@Example.org", token: "r-p", at: now, link: "r-l"),
                                     mail: Self.mail(at: now), at: now)
        _ = try store.completePendingSignup(formToken: "r-p", at: now, announce: false)
        XCTAssertEqual(try store.account(withProvedEmail: "proved@EXAMPLE.org")?.username, "Proved", file: file, line: line)

        XCTAssertEqual(try store.removeExpiredRecoveries(at: now.addingTimeInterval(899)), 0, file: file, line: line)
        XCTAssertEqual(try store.removeExpiredRecoveries(at: now.addingTimeInterval(900)), 2, file: file, line: line)
    }
}

extension AccountStoreContract {
    /// Issue 43's groundwork: an account's live sessions are listed for its owner (device,
    /// network, handle, when they began, were last used and last proved), most recent first;
    /// one is ended by its handle (another account's handle ends nothing); all but one end at
    /// once; a fresh sign-in is recorded; ended and idle sessions are not listed.
    public func ownersSeeAndEndTheirSessions(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let rules = SignInSessionRules(idleTimeout: 3600)
        let owner = try store.createAccount(NewAccount(username: "Traveller", email: "t@example.org", passwordHash: "h",
                                                       formToken: "s-form-1"))
        let other = try store.createAccount(NewAccount(username: "Stranger", email: "s@example.org", passwordHash: "h",
                                                       formToken: "s-form-2"))
        func start(_ hash: String, _ account: Account, at date: Date, device: String, publicID: String) throws {
            try store.startSignInSession(NewSignInSession(idHash: hash, accountID: account.id, createdAt: date,
                                                          expiresAt: date.addingTimeInterval(86_400), device: device,
                                                          network: "203.0.113.0/24", publicID: publicID))
        }
        try start("h-laptop", owner, at: now, device: "Firefox · Linux", publicID: "p-laptop")
        try start("h-phone", owner, at: now.addingTimeInterval(60), device: "Safari · iOS", publicID: "p-phone")
        try start("h-tablet", owner, at: now.addingTimeInterval(120), device: "Chrome · Android", publicID: "p-tablet")
        try start("h-other", other, at: now, device: "Edge · Windows", publicID: "p-other")
        try start("h-idle", owner, at: now.addingTimeInterval(-7200), device: "Opera · macOS", publicID: "p-idle")

        let listed = try reopen().signInSessions(ofAccount: owner.id, at: now.addingTimeInterval(300), rules: rules)
        XCTAssertEqual(listed.map(\.publicID), ["p-tablet", "p-phone", "p-laptop"], "live ones, most recent first",
                       file: file, line: line)
        XCTAssertEqual(listed.last?.device, "Firefox · Linux", file: file, line: line)
        XCTAssertEqual(listed.last?.network, "203.0.113.0/24", file: file, line: line)
        XCTAssertEqual(listed.last?.authenticatedAt, now, "proved when it began", file: file, line: line)
        XCTAssertEqual(listed.last?.idHash, "h-laptop", file: file, line: line)

        XCTAssertTrue(try store.recordAuthentication(idHash: "h-laptop", at: now.addingTimeInterval(200)), file: file, line: line)
        XCTAssertFalse(try store.recordAuthentication(idHash: "h-gone", at: now), file: file, line: line)
        XCTAssertEqual(try store.signInSessions(ofAccount: owner.id, at: now.addingTimeInterval(300), rules: rules)
                        .first { $0.publicID == "p-laptop" }?.authenticatedAt, now.addingTimeInterval(200), file: file, line: line)

        XCTAssertFalse(try store.endSignInSession(publicID: "p-other", ofAccount: owner.id), "not this account's",
                       file: file, line: line)
        XCTAssertNotNil(try store.signedInAccount(idHash: "h-other", at: now, rules: rules), file: file, line: line)
        XCTAssertTrue(try store.endSignInSession(publicID: "p-phone", ofAccount: owner.id), file: file, line: line)
        XCTAssertNil(try store.signedInAccount(idHash: "h-phone", at: now.addingTimeInterval(300), rules: rules),
                     file: file, line: line)
        XCTAssertEqual(try store.endSignInSessions(ofAccount: owner.id, keeping: "h-laptop"), 2, "the tablet and the idle one",
                       file: file, line: line)
        XCTAssertEqual(try store.signInSessions(ofAccount: owner.id, at: now.addingTimeInterval(300), rules: rules).map(\.publicID),
                       ["p-laptop"], file: file, line: line)
        XCTAssertEqual(try store.signInSessions(ofAccount: other.id, at: now.addingTimeInterval(300), rules: rules).count, 1,
                       "another account's sessions stay", file: file, line: line)
        XCTAssertEqual(try store.endSignInSessions(ofAccount: owner.id, keeping: nil), 1, file: file, line: line)
    }
}

extension AccountStoreContract {
    private static func notice(_ type: String, at now: Date) -> OutboxEvent {
        OutboxEvent(id: OutboxEvent.makeID(), type: type, body: "sealed", createdAt: now, channel: .accountMail)
    }

    private func noticeTypes(at now: Date) throws -> [String] {
        // Sorted: events written at the same instant come out in either order.
        try store.claimDueEvents(channel: .accountMail, at: now.addingTimeInterval(1), limit: 100, lease: 60).map(\.event.type).sorted()
    }

    /// Issue 43: what an owner and an operator change, each in one transaction with its
    /// notice. A password change only from the hash it was read with, ending every session
    /// but the changer's; a passkey renamed and removed only by its account, never the last
    /// way in; an account disabled (sessions ended, data kept) and enabled once each; a
    /// deleted account's sessions and passkeys gone with it and its name held until the
    /// reservation ends, another account untouched.
    public func ownersAndOperatorsChangeAccounts(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let rules = SignInSessionRules(idleTimeout: 3600)
        let owner = try store.createAccount(NewAccount(username: "Changer", email: "c@example.org", passwordHash: "old",
                                                       formToken: "c-form-1"))
        let other = try store.createAccount(NewAccount(username: "Bystander", email: "b@example.org", passwordHash: "h",
                                                       formToken: "c-form-2"))
        func start(_ hash: String, _ account: Account) throws {
            try store.startSignInSession(NewSignInSession(idHash: hash, accountID: account.id, createdAt: now,
                                                          expiresAt: now.addingTimeInterval(86_400), device: "d",
                                                          network: "n", publicID: "p-" + hash))
        }
        for hash in ["here", "there", "elsewhere"] { try start(hash, owner) }
        try start("bystander", other)

        // The password.
        XCTAssertNil(try store.changePassword(ofAccount: owner.id, from: "stale", to: "new", keeping: "here",
                                              events: [Self.notice("mail.lost", at: now)]),
                     "a hash changed meanwhile wins", file: file, line: line)
        XCTAssertEqual(try store.changePassword(ofAccount: owner.id, from: "old", to: "new", keeping: "here",
                                                events: [Self.notice("mail.password_changed", at: now)]), 2,
                       file: file, line: line)
        XCTAssertEqual(try reopen().account(id: owner.id)?.passwordHash, "new", file: file, line: line)
        XCTAssertEqual(try store.signInSessions(ofAccount: owner.id, at: now, rules: rules).map(\.idHash), ["here"],
                       file: file, line: line)
        XCTAssertNotNil(try store.signedInAccount(idHash: "bystander", at: now, rules: rules), file: file, line: line)
        XCTAssertEqual(try noticeTypes(at: now), ["mail.password_changed"], "only the change that happened is told",
                       file: file, line: line)

        // Passkeys: named, removed, never the last way in.
        func key(_ id: UInt8, _ account: Account) -> Passkey {
            Passkey(credentialID: [id], accountID: account.id, publicKey: [0xA5], algorithm: -7, signCount: 0, transports: [],
                    isBackupEligible: true, isBackedUp: true, createdAt: now, name: "Laptop")
        }
        try store.addPasskey(key(1, owner), events: [Self.notice("mail.passkey_added", at: now)])
        try store.addPasskey(key(2, owner))
        try store.addPasskey(key(3, other))
        XCTAssertEqual(try store.passkeys(ofAccount: owner.id).map(\.name), ["Laptop", "Laptop"], file: file, line: line)
        XCTAssertTrue(try store.renamePasskey(credentialID: [1], ofAccount: owner.id, to: "Work laptop"), file: file, line: line)
        XCTAssertFalse(try store.renamePasskey(credentialID: [3], ofAccount: owner.id, to: "Mine"), "another account's",
                       file: file, line: line)
        XCTAssertEqual(try reopen().passkey(credentialID: [1])?.name, "Work laptop", file: file, line: line)
        XCTAssertEqual(try store.passkey(credentialID: [3])?.name, "Laptop", file: file, line: line)
        XCTAssertEqual(try store.removePasskey(credentialID: [3], ofAccount: owner.id, events: []), .notFound,
                       file: file, line: line)
        XCTAssertEqual(try store.removePasskey(credentialID: [1], ofAccount: owner.id,
                                               events: [Self.notice("mail.passkey_removed", at: now)]), .removed,
                       file: file, line: line)
        XCTAssertEqual(try store.passkeys(ofAccount: owner.id).map(\.credentialID), [[2]], file: file, line: line)
        // The bystander has no password: its one passkey is its last way in.
        let keyOnly = try store.createAccount(NewAccount(username: "KeyOnly", email: "k@example.org",
                                                         passwordHash: Account.unusablePasswordHash, formToken: "c-form-3"))
        try store.addPasskey(key(4, keyOnly))
        XCTAssertEqual(try store.removePasskey(credentialID: [4], ofAccount: keyOnly.id, events: [Self.notice("mail.lost", at: now)]),
                       .lastWayIn, file: file, line: line)
        XCTAssertEqual(try store.passkeys(ofAccount: keyOnly.id).count, 1, file: file, line: line)
        XCTAssertEqual(try noticeTypes(at: now), ["mail.passkey_added", "mail.passkey_removed"], file: file, line: line)

        // Disabled and enabled, once each.
        XCTAssertEqual(try store.setAccountDisabled(id: owner.id, at: now, events: [Self.notice("mail.account_disabled", at: now)]), 1,
                       "its last session ended", file: file, line: line)
        XCTAssertNil(try store.setAccountDisabled(id: owner.id, at: now, events: []), "already disabled", file: file, line: line)
        XCTAssertEqual(try reopen().account(id: owner.id)?.disabledAt, now, file: file, line: line)
        XCTAssertEqual(try store.account(id: owner.id)?.passwordHash, "new", "its data stays", file: file, line: line)
        XCTAssertEqual(try store.setAccountDisabled(id: owner.id, at: nil, events: []), 0, file: file, line: line)
        XCTAssertNil(try store.setAccountDisabled(id: owner.id, at: nil, events: []), "already enabled", file: file, line: line)
        XCTAssertNil(try store.account(id: owner.id)?.disabledAt, file: file, line: line)
        XCTAssertNil(try store.setAccountDisabled(id: 999_999, at: now, events: []), file: file, line: line)

        // Deleted, its name held for a while.
        try start("again", owner)
        XCTAssertTrue(try store.deleteAccount(id: owner.id, reservingUsernameUntil: now.addingTimeInterval(3600),
                                              events: [Self.notice("mail.account_deleted", at: now)]), file: file, line: line)
        XCTAssertFalse(try store.deleteAccount(id: owner.id, reservingUsernameUntil: now, events: []), file: file, line: line)
        XCTAssertNil(try reopen().account(id: owner.id), file: file, line: line)
        XCTAssertNil(try store.signedInAccount(idHash: "again", at: now, rules: rules), file: file, line: line)
        XCTAssertNil(try store.passkey(credentialID: [2]), "its passkeys went with it", file: file, line: line)
        XCTAssertTrue(try store.isUsernameTaken("changer", at: now.addingTimeInterval(3599)), "held", file: file, line: line)
        XCTAssertFalse(try store.isUsernameTaken("Changer", at: now.addingTimeInterval(3600)), "free when it ends",
                       file: file, line: line)
        XCTAssertEqual(try store.removeEndedUsernameReservations(at: now.addingTimeInterval(3600)), 1, file: file, line: line)
        XCTAssertEqual(try store.removeEndedUsernameReservations(at: now.addingTimeInterval(3600)), 0, file: file, line: line)
        XCTAssertNotNil(try store.account(id: other.id), file: file, line: line)
        XCTAssertNotNil(try store.passkey(credentialID: [3]), file: file, line: line)
        XCTAssertNotNil(try store.signedInAccount(idHash: "bystander", at: now, rules: rules), file: file, line: line)
        XCTAssertEqual(try noticeTypes(at: now), ["mail.account_deleted", "mail.account_disabled"], file: file, line: line)
    }
}

extension AccountStoreContract {
    /// Issue 43: a new address waits for its proof (the old one stays), counts its tries,
    /// becomes the account's proved address once, with an undo link for the old one; an
    /// address another account proved meanwhile is refused; the undo restores the old address
    /// once, ending every session; expired ones are swept.
    public func addressChangesWaitForTheirProofAndCanBeUndone(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let rules = SignInSessionRules(idleTimeout: 3600)
        let owner = try store.createAccount(NewAccount(username: "Addressee", email: "old@example.org", passwordHash: "h",
                                                       formToken: "e-form-1"))
        let other = try store.createAccount(NewAccount(username: "Holder", email: "h@example.org", passwordHash: "h",
                                                       formToken: "e-form-2"))
        func change(_ email: String) -> EmailChange {
            EmailChange(accountID: owner.id, newEmail: email, codeHash: "c", expiresAt: now.addingTimeInterval(900), createdAt: now)
        }
        try store.startEmailChange(change("first@example.org"), mail: nil)
        try store.startEmailChange(change("new@example.org"), mail: OutboxEvent(id: OutboxEvent.makeID(), type: "mail.email_change",
                                                                               body: "sealed", createdAt: now, channel: .accountMail))
        XCTAssertEqual(try reopen().emailChange(ofAccount: owner.id, at: now)?.newEmail, "new@example.org", "the newer replaces",
                       file: file, line: line)
        XCTAssertEqual(try store.account(id: owner.id)?.email, "old@example.org", "the old address stays until the proof",
                       file: file, line: line)
        XCTAssertEqual(try store.spendEmailChangeTry(ofAccount: owner.id, maximum: 2, at: now), 1, file: file, line: line)
        XCTAssertEqual(try store.spendEmailChangeTry(ofAccount: owner.id, maximum: 2, at: now), 2, file: file, line: line)
        XCTAssertNil(try store.spendEmailChangeTry(ofAccount: owner.id, maximum: 2, at: now), "no tries left", file: file, line: line)
        XCTAssertNil(try store.emailChange(ofAccount: owner.id, at: now.addingTimeInterval(900)), "expired", file: file, line: line)

        let done = try store.completeEmailChange(ofAccount: owner.id, at: now, undoLinkHash: "undo-1",
                                                 undoUntil: now.addingTimeInterval(7 * 86_400)) { account, previous in
            [OutboxEvent(id: OutboxEvent.makeID(), type: "mail.email_changed:\(previous)->\(account.email)", body: "sealed",
                         createdAt: now, channel: .accountMail)]
        }
        guard case .changed(let changed, let previous) = done else { return XCTFail("changed: \(done)", file: file, line: line) }
        XCTAssertEqual(changed.email, "new@example.org", file: file, line: line)
        XCTAssertEqual(changed.emailVerifiedAt, now, "proved", file: file, line: line)
        XCTAssertEqual(previous, "old@example.org", file: file, line: line)
        XCTAssertEqual(try reopen().account(withProvedEmail: "NEW@example.org")?.id, owner.id, file: file, line: line)
        XCTAssertEqual(try store.completeEmailChange(ofAccount: owner.id, at: now, undoLinkHash: "undo-2", undoUntil: now) { _, _ in [] },
                       .none, "once", file: file, line: line)
        let types = try store.claimDueEvents(channel: .accountMail, at: now.addingTimeInterval(1), limit: 10, lease: 60)
            .map(\.event.type).sorted()
        XCTAssertEqual(types, ["mail.email_change", "mail.email_changed:old@example.org->new@example.org"], file: file, line: line)

        // An address another account proved meanwhile is refused, and the change is spent.
        try store.startEmailChange(EmailChange(accountID: other.id, newEmail: "New@Example.org", codeHash: "c",
                                               expiresAt: now.addingTimeInterval(900), createdAt: now), mail: nil)
        XCTAssertEqual(try store.completeEmailChange(ofAccount: other.id, at: now, undoLinkHash: "undo-3", undoUntil: now) { _, _ in [] },
                       .taken, file: file, line: line)
        XCTAssertEqual(try store.account(id: other.id)?.email, "h@example.org", file: file, line: line)
        XCTAssertNil(try store.emailChange(ofAccount: other.id, at: now), file: file, line: line)

        // The undo: once, the old address back, every session of the account ended.
        try store.startSignInSession(NewSignInSession(idHash: "thief", accountID: owner.id, createdAt: now,
                                                      expiresAt: now.addingTimeInterval(3600)))
        try store.startSignInSession(NewSignInSession(idHash: "holder", accountID: other.id, createdAt: now,
                                                      expiresAt: now.addingTimeInterval(3600)))
        XCTAssertNil(try store.undoEmailChange(linkHash: "unknown", at: now) { _ in [] }, file: file, line: line)
        XCTAssertNil(try store.undoEmailChange(linkHash: "undo-1", at: now.addingTimeInterval(7 * 86_400)) { _ in [] }, "expired",
                     file: file, line: line)
        guard case .restored(let restored, _) = try store.undoEmailChange(linkHash: "undo-1", at: now, events: { _ in [] }) else {
            return XCTFail("restored", file: file, line: line)
        }
        XCTAssertEqual(restored.email, "old@example.org", file: file, line: line)
        XCTAssertNil(restored.emailVerifiedAt, "as it was: never proved", file: file, line: line)
        XCTAssertNil(try store.signedInAccount(idHash: "thief", at: now, rules: rules), file: file, line: line)
        XCTAssertNotNil(try store.signedInAccount(idHash: "holder", at: now, rules: rules), file: file, line: line)
        XCTAssertNil(try store.undoEmailChange(linkHash: "undo-1", at: now) { _ in [] }, "once", file: file, line: line)
        XCTAssertNil(try store.account(withProvedEmail: "new@example.org"), "the new address is free again", file: file, line: line)

        try store.startEmailChange(change("later@example.org"), mail: nil)
        XCTAssertEqual(try store.removeExpiredEmailChanges(at: now.addingTimeInterval(900)), 1, file: file, line: line)
    }
}

extension AccountStoreContract {
    /// Issue 44: a second factor is set up (replaceable until on), switched on once with its
    /// recovery codes and its announcement, accepts each step once and never an older one, spends
    /// each recovery code once, replaces them all, and goes with its codes; another account's
    /// factor is untouched; deleting the account takes it along.
    public func secondFactorsAcceptEachCodeOnce(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let owner = try store.createAccount(NewAccount(username: "Guarded", email: "g@example.org", passwordHash: "h",
                                                       formToken: "f-form-1"))
        let other = try store.createAccount(NewAccount(username: "Neighbour2", email: "n2@example.org", passwordHash: "h",
                                                       formToken: "f-form-2"))
        XCTAssertNil(try store.secondFactor(ofAccount: owner.id), file: file, line: line)
        XCTAssertTrue(try store.startSecondFactorSetup(ofAccount: owner.id, sealedSecret: [1], at: now), file: file, line: line)
        XCTAssertTrue(try store.startSecondFactorSetup(ofAccount: owner.id, sealedSecret: [2, 2], at: now), "replaced",
                      file: file, line: line)
        XCTAssertEqual(try reopen().secondFactor(ofAccount: owner.id)?.sealedSecret, [2, 2], file: file, line: line)
        XCTAssertFalse(try store.spendSecondFactorStep(ofAccount: owner.id, step: 5), "not on yet", file: file, line: line)

        let announcement = OutboxEvent(id: OutboxEvent.makeID(), type: "account.second_factor_enabled", body: "{}", createdAt: now)
        XCTAssertTrue(try store.enableSecondFactor(ofAccount: owner.id, step: 100, recoveryCodeHashes: ["a", "b", "c"], at: now,
                                                   events: [announcement]), file: file, line: line)
        XCTAssertFalse(try store.enableSecondFactor(ofAccount: owner.id, step: 101, recoveryCodeHashes: [], at: now, events: []),
                       "once", file: file, line: line)
        XCTAssertFalse(try store.startSecondFactorSetup(ofAccount: owner.id, sealedSecret: [3], at: now), "on: not replaced",
                       file: file, line: line)
        let enabled = try XCTUnwrap(try store.secondFactor(ofAccount: owner.id), file: file, line: line)
        XCTAssertEqual(enabled.enabledAt, now, file: file, line: line)
        XCTAssertEqual(enabled.sealedSecret, [2, 2], file: file, line: line)
        XCTAssertEqual(enabled.recoveryCodesLeft, 3, file: file, line: line)
        XCTAssertEqual(try store.claimDueEvents(channel: .webhook, at: now.addingTimeInterval(1), limit: 10, lease: 60).map(\.event.type),
                       ["account.second_factor_enabled"], file: file, line: line)

        // Each step once, and never one before the latest accepted.
        XCTAssertFalse(try store.spendSecondFactorStep(ofAccount: owner.id, step: 100), "the setup's own code", file: file, line: line)
        XCTAssertTrue(try store.spendSecondFactorStep(ofAccount: owner.id, step: 102), file: file, line: line)
        XCTAssertFalse(try reopen().spendSecondFactorStep(ofAccount: owner.id, step: 102), "replayed, from another instance",
                       file: file, line: line)
        XCTAssertFalse(try store.spendSecondFactorStep(ofAccount: owner.id, step: 101), "an older one after a newer",
                       file: file, line: line)

        XCTAssertTrue(try store.spendRecoveryCode(ofAccount: owner.id, hash: "b"), file: file, line: line)
        XCTAssertFalse(try store.spendRecoveryCode(ofAccount: owner.id, hash: "b"), "once", file: file, line: line)
        XCTAssertFalse(try store.spendRecoveryCode(ofAccount: other.id, hash: "a"), "another account's", file: file, line: line)
        XCTAssertEqual(try store.secondFactor(ofAccount: owner.id)?.recoveryCodesLeft, 2, file: file, line: line)
        XCTAssertTrue(try store.replaceRecoveryCodes(ofAccount: owner.id, hashes: ["x", "y"], events: []), file: file, line: line)
        XCTAssertFalse(try store.spendRecoveryCode(ofAccount: owner.id, hash: "a"), "the old ones are void", file: file, line: line)
        XCTAssertTrue(try store.spendRecoveryCode(ofAccount: owner.id, hash: "x"), file: file, line: line)
        XCTAssertFalse(try store.replaceRecoveryCodes(ofAccount: other.id, hashes: ["z"], events: []), "no factor", file: file, line: line)

        XCTAssertTrue(try store.startSecondFactorSetup(ofAccount: other.id, sealedSecret: [9], at: now), file: file, line: line)
        XCTAssertTrue(try store.removeSecondFactor(ofAccount: owner.id, events: []), file: file, line: line)
        XCTAssertFalse(try store.removeSecondFactor(ofAccount: owner.id, events: []), file: file, line: line)
        XCTAssertNil(try store.secondFactor(ofAccount: owner.id), file: file, line: line)
        XCTAssertFalse(try store.spendRecoveryCode(ofAccount: owner.id, hash: "y"), "its codes went with it", file: file, line: line)
        XCTAssertEqual(try store.secondFactor(ofAccount: other.id)?.sealedSecret, [9], "another account's stays",
                       file: file, line: line)
        XCTAssertTrue(try store.deleteAccount(id: other.id, reservingUsernameUntil: now, events: []), file: file, line: line)
        XCTAssertNil(try store.secondFactor(ofAccount: other.id), "deleted with its account", file: file, line: line)
    }

    /// Issue 45: an account made through a provider has its link (and a proved address when
    /// the provider's claim is trusted); an identity links one account only; unlinking never
    /// takes the last way in; links go with their account.
    public func providerIdentitiesLinkOneAccountEach(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let identity = NewProviderLink(provider: "example", issuer: "https://id.example", subject: "sub-1", email: "p@example.org")
        let made = try store.createAccount(NewAccount(
            username: "Linked", email: "p@example.org", passwordHash: Account.unusablePasswordHash, formToken: "p-form-1",
            announce: true, providerLink: identity, emailVerifiedAt: now))
        XCTAssertEqual(made.emailVerifiedAt, now, "proved by the trusted provider", file: file, line: line)
        XCTAssertEqual(try reopen().account(linkedTo: "https://id.example", subject: "sub-1")?.id, made.id, file: file, line: line)
        XCTAssertNil(try store.account(linkedTo: "https://other.example", subject: "sub-1"), "the issuer is part of it",
                     file: file, line: line)
        let created = try store.claimDueEvents(channel: .webhook, at: now.addingTimeInterval(1), limit: 10, lease: 60)
        XCTAssertEqual(created.map(\.event.type), ["account.created"], file: file, line: line)
        XCTAssertTrue(created.first?.event.body.contains("\"method\":\"provider\",\"provider\":\"example\"") == true,
                      created.first?.event.body ?? "", file: file, line: line)

        // The same identity on a second new account: refused, nothing made.
        XCTAssertThrowsError(try store.createAccount(NewAccount(
            username: "Thief", email: "t@example.org", passwordHash: Account.unusablePasswordHash, formToken: "p-form-2",
            providerLink: identity)), file: file, line: line) { error in
            XCTAssertEqual(error as? ProviderLinkError, .linkedElsewhere, file: file, line: line)
        }
        XCTAssertNil(try store.account(named: "Thief"), "rolled back", file: file, line: line)
        // A proved address another account holds: refused like any proved duplicate.
        XCTAssertThrowsError(try store.createAccount(NewAccount(
            username: "Copycat", email: "P@example.org", passwordHash: Account.unusablePasswordHash, formToken: "p-form-3",
            providerLink: NewProviderLink(provider: "example", issuer: "https://id.example", subject: "sub-2", email: "P@example.org"),
            emailVerifiedAt: now)), file: file, line: line) { error in
            XCTAssertEqual(error as? AccountCreationError, .emailTaken, file: file, line: line)
        }

        let other = try store.createAccount(NewAccount(username: "Passworded", email: "pw@example.org", passwordHash: "h",
                                                       formToken: "p-form-4"))
        XCTAssertThrowsError(try store.linkProvider(identity, toAccount: other.id, at: now, events: []), file: file, line: line) { error in
            XCTAssertEqual(error as? ProviderLinkError, .linkedElsewhere, file: file, line: line)
        }
        XCTAssertNoThrow(try store.linkProvider(identity, toAccount: made.id, at: now, events: []), "already its own: nothing changes",
                         file: file, line: line)
        let second = NewProviderLink(provider: "work", issuer: "https://work.example", subject: "w-9", email: "pw@work.example")
        let linked = OutboxEvent(id: OutboxEvent.makeID(), type: "account.provider_linked", body: "{}", createdAt: now)
        try store.linkProvider(second, toAccount: other.id, at: now, events: [linked])
        XCTAssertEqual(try store.providerLinks(ofAccount: other.id).map(\.provider), ["work"], file: file, line: line)
        XCTAssertEqual(try store.claimDueEvents(channel: .webhook, at: now.addingTimeInterval(2), limit: 10, lease: 60).map(\.event.type),
                       ["account.provider_linked"], file: file, line: line)

        // The provider-only account keeps its one way in; the one with a password may unlink.
        XCTAssertEqual(try store.unlinkProvider(issuer: "https://id.example", subject: "sub-1", fromAccount: made.id, events: []),
                       .lastWayIn, file: file, line: line)
        XCTAssertEqual(try store.unlinkProvider(issuer: "https://id.example", subject: "sub-1", fromAccount: other.id, events: []),
                       .notFound, "another account's link", file: file, line: line)
        XCTAssertEqual(try store.unlinkProvider(issuer: "https://work.example", subject: "w-9", fromAccount: other.id, events: []),
                       .removed, file: file, line: line)
        XCTAssertNil(try store.account(linkedTo: "https://work.example", subject: "w-9"), file: file, line: line)

        XCTAssertTrue(try store.deleteAccount(id: made.id, reservingUsernameUntil: now, events: []), file: file, line: line)
        XCTAssertNil(try store.account(linkedTo: "https://id.example", subject: "sub-1"), "deleted with its account",
                     file: file, line: line)
        try store.linkProvider(identity, toAccount: other.id, at: now, events: [])
        XCTAssertEqual(try store.account(linkedTo: "https://id.example", subject: "sub-1")?.id, other.id, "free again once deleted",
                       file: file, line: line)
    }
}

private final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Int] = [:]
    func add(_ outcome: String) { lock.withLock { values[outcome, default: 0] += 1 } }
    var counts: [String: Int] { lock.withLock { values } }
}

extension AccountStore {
    /// Whether a username is in use at the computer's time (the contract's tests run on it;
    /// the app asks at its clock's time).
    public func isUsernameTaken(_ username: String) throws -> Bool {
        try isUsernameTaken(username, at: Date())
    }
}

extension AccountStoreContract {
    /// Issue 52: wrong second-factor codes are counted in a row per account, one atomic update
    /// each, up to the policy's number and never past it (parallel guesses included); the counts
    /// the caller names write their events once; a right code clears the count; an account
    /// without a factor on counts nothing; a new setup starts from nothing.
    public func wrongSecondFactorCodesAreCountedInARowAndLock(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let owner = try store.createAccount(NewAccount(username: "Counted", email: "c@example.org", passwordHash: "h",
                                                       formToken: "w-form-1"))
        let other = try store.createAccount(NewAccount(username: "Uncounted", email: "u@example.org", passwordHash: "h",
                                                       formToken: "w-form-2"))
        let lockout = SecondFactorLockout(wrongCodes: 6)
        func notice(_ type: String) -> [OutboxEvent] {
            [OutboxEvent(id: OutboxEvent.makeID(), type: type, body: "{}", createdAt: now, channel: .accountMail)]
        }
        let notices = [3: notice("mail.second_factor_wrong_codes"), 6: notice("mail.second_factor_locked")]
        XCTAssertNil(try store.chargeSecondFactorCode(ofAccount: owner.id, lockout: lockout, notices: notices), "no factor",
                     file: file, line: line)
        XCTAssertTrue(try store.startSecondFactorSetup(ofAccount: owner.id, sealedSecret: [1], at: now), file: file, line: line)
        XCTAssertNil(try store.chargeSecondFactorCode(ofAccount: owner.id, lockout: lockout, notices: notices), "not on yet",
                     file: file, line: line)
        XCTAssertTrue(try store.enableSecondFactor(ofAccount: owner.id, step: 100, recoveryCodeHashes: ["a"], at: now, events: []),
                      file: file, line: line)
        XCTAssertTrue(try store.startSecondFactorSetup(ofAccount: other.id, sealedSecret: [2], at: now), file: file, line: line)
        XCTAssertTrue(try store.enableSecondFactor(ofAccount: other.id, step: 100, recoveryCodeHashes: [], at: now, events: []),
                      file: file, line: line)

        XCTAssertEqual(try store.chargeSecondFactorCode(ofAccount: owner.id, lockout: lockout, notices: notices), 1,
                       file: file, line: line)
        XCTAssertEqual(try store.chargeSecondFactorCode(ofAccount: owner.id, lockout: lockout, notices: notices), 2,
                       file: file, line: line)
        try store.clearSecondFactorFailures(ofAccount: owner.id)
        XCTAssertEqual(try reopen().secondFactor(ofAccount: owner.id)?.failedCodes, 0, "a right code clears it", file: file, line: line)

        // Guesses sent together: exactly up to the number, each count once.
        let results = Outcomes(), store = self.store
        DispatchQueue.concurrentPerform(iterations: 10) { _ in
            let count = (try? store.chargeSecondFactorCode(ofAccount: owner.id, lockout: lockout, notices: notices)) ?? nil
            results.add(count.map(String.init) ?? "locked")
        }
        XCTAssertEqual(results.counts, ["1": 1, "2": 1, "3": 1, "4": 1, "5": 1, "6": 1, "locked": 4], file: file, line: line)
        XCTAssertEqual(try reopen().secondFactor(ofAccount: owner.id)?.failedCodes, 6, file: file, line: line)
        XCTAssertEqual(try store.claimDueEvents(channel: .accountMail, at: now.addingTimeInterval(1), limit: 10, lease: 60)
            .map(\.event.type).sorted(), ["mail.second_factor_locked", "mail.second_factor_wrong_codes"], "each once",
                       file: file, line: line)
        XCTAssertEqual(try store.secondFactor(ofAccount: other.id)?.failedCodes, 0, "another account's count", file: file, line: line)
        XCTAssertEqual(try store.chargeSecondFactorCode(ofAccount: other.id, lockout: lockout, notices: [:]), 1, file: file, line: line)

        try store.clearSecondFactorFailures(ofAccount: owner.id)
        XCTAssertEqual(try store.chargeSecondFactorCode(ofAccount: owner.id, lockout: lockout, notices: [:]), 1,
                       "unlocked by a right code", file: file, line: line)
        XCTAssertTrue(try store.removeSecondFactor(ofAccount: owner.id, events: []), file: file, line: line)
        XCTAssertTrue(try store.startSecondFactorSetup(ofAccount: owner.id, sealedSecret: [3], at: now), file: file, line: line)
        XCTAssertEqual(try store.secondFactor(ofAccount: owner.id)?.failedCodes, 0, "a new setup starts from nothing",
                       file: file, line: line)
    }

    /// Issue 52: proving a new address ends the recoveries still open for the old one (its
    /// mailbox no longer opens the account); another account's recovery stays.
    public func provingANewAddressEndsTheOldOnesRecoveries(file: StaticString = #filePath, line: UInt = #line) throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let owner = try store.createAccount(NewAccount(username: "Mover", email: "old-box@example.org", passwordHash: "h",
                                                       formToken: "r-form-1"))
        let other = try store.createAccount(NewAccount(username: "Stayer", email: "stay@example.org", passwordHash: "h",
                                                       formToken: "r-form-2"))
        func recovery(_ token: String, _ account: Account) -> AccountRecovery {
            AccountRecovery(token: token, accountID: account.id, codeHash: "code-\(token)", linkHash: "link-\(token)",
                            language: "en", expiresAt: now.addingTimeInterval(900), createdAt: now)
        }
        try store.startRecovery(recovery("mover-recovery", owner), mail: nil)
        try store.startRecovery(recovery("stayer-recovery", other), mail: nil)
        XCTAssertNotNil(try store.recovery(token: "mover-recovery", at: now), file: file, line: line)
        try store.startEmailChange(EmailChange(accountID: owner.id, newEmail: "new-box@example.org", codeHash: "c",
                                               expiresAt: now.addingTimeInterval(900), createdAt: now), mail: nil)
        guard case .changed = try store.completeEmailChange(ofAccount: owner.id, at: now, undoLinkHash: "undo-r",
                                                            undoUntil: now.addingTimeInterval(86_400), events: { _, _ in [] }) else {
            return XCTFail("changed", file: file, line: line)
        }
        XCTAssertNil(try store.recovery(token: "mover-recovery", at: now), "the old address's recovery ended", file: file, line: line)
        XCTAssertNil(try store.recovery(linkHash: "link-mover-recovery", at: now), file: file, line: line)
        XCTAssertNotNil(try store.recovery(token: "stayer-recovery", at: now), "another account's stays", file: file, line: line)
    }
}

extension AccountStoreContract {
    /// Issue 52: a new session keeps the account at `keep` sessions, ending the least recently
    /// used others in the same transaction (and saying which); the new one always stays;
    /// another account's sessions are untouched.
    public func newSessionsEndTheLeastRecentlyUsedBeyondTheCap(file: StaticString = #filePath, line: UInt = #line) throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let rules = SignInSessionRules(idleTimeout: 86_400)
        let owner = try store.createAccount(NewAccount(username: "Capped", email: "cap@example.org", passwordHash: "h",
                                                       formToken: "cap-form-1"))
        let other = try store.createAccount(NewAccount(username: "Uncapped", email: "uncap@example.org", passwordHash: "h",
                                                       formToken: "cap-form-2"))
        func session(_ hash: String, _ account: Account, at date: Date) -> NewSignInSession {
            NewSignInSession(idHash: hash, accountID: account.id, createdAt: date, expiresAt: date.addingTimeInterval(86_400))
        }
        try store.startSignInSession(session("other-1", other, at: start))
        for index in 0..<3 {
            XCTAssertEqual(try store.startSignInSession(session("s\(index)", owner, at: start.addingTimeInterval(Double(index))),
                                                        keepingAtMost: 3), [], "within the cap", file: file, line: line)
        }
        XCTAssertEqual(try store.startSignInSession(session("s3", owner, at: start.addingTimeInterval(3)), keepingAtMost: 3), ["s0"],
                       "the least recently used", file: file, line: line)
        XCTAssertEqual(try reopen().startSignInSession(session("s4", owner, at: start.addingTimeInterval(4)), keepingAtMost: 2)
            .sorted(), ["s1", "s2"], file: file, line: line)
        let now = start.addingTimeInterval(5)
        XCTAssertEqual(try store.signInSessions(ofAccount: owner.id, at: now, rules: rules).map(\.idHash).sorted(), ["s3", "s4"],
                       file: file, line: line)
        XCTAssertEqual(try store.startSignInSession(session("s5", owner, at: now), keepingAtMost: 1).sorted(), ["s3", "s4"],
                       "the new one stays, alone", file: file, line: line)
        XCTAssertNotNil(try store.signedInAccount(idHash: "other-1", at: now, rules: rules), "another account's", file: file, line: line)
    }
}

extension AccountStoreContract {
    /// Issue 52, item 5: undoing an address change takes back every way in added since the
    /// change (passkeys, provider links, a second factor, a changed password: the one from
    /// before is back), in the same transaction, and nothing from before it.
    public func undoingAnAddressChangeTakesBackEveryWayInAddedSince(file: StaticString = #filePath, line: UInt = #line) throws {
        let before = Date(timeIntervalSince1970: 1_800_000_000), changed = before.addingTimeInterval(100)
        let after = changed.addingTimeInterval(60)
        let owner = try store.createAccount(NewAccount(username: "Retaken", email: "mine@example.org", passwordHash: "owner-hash",
                                                       formToken: "undo-form-1"))
        func passkey(_ id: UInt8, at date: Date) -> Passkey {
            Passkey(credentialID: [id, 7, 7], accountID: owner.id, publicKey: [1], algorithm: -7, signCount: 0, transports: [],
                    isBackupEligible: false, isBackedUp: false, createdAt: date)
        }
        try store.addPasskey(passkey(1, at: before), events: [])
        try store.linkProvider(NewProviderLink(provider: "p", issuer: "https://id.example", subject: "owner", email: "mine@example.org"),
                               toAccount: owner.id, at: before, events: [])
        try store.startEmailChange(EmailChange(accountID: owner.id, newEmail: "takers@example.org", codeHash: "c",
                                               expiresAt: changed.addingTimeInterval(900), createdAt: changed), mail: nil)
        guard case .changed = try store.completeEmailChange(ofAccount: owner.id, at: changed, undoLinkHash: "undo-taken",
                                                            undoUntil: changed.addingTimeInterval(7 * 86_400), events: { _, _ in [] }) else {
            return XCTFail("changed", file: file, line: line)
        }
        // What the taker adds to come back.
        try store.addPasskey(passkey(2, at: after), events: [])
        try store.linkProvider(NewProviderLink(provider: "p", issuer: "https://id.example", subject: "taker", email: "takers@example.org"),
                               toAccount: owner.id, at: after, events: [])
        XCTAssertTrue(try store.startSecondFactorSetup(ofAccount: owner.id, sealedSecret: [9], at: after), file: file, line: line)
        XCTAssertTrue(try store.enableSecondFactor(ofAccount: owner.id, step: 1, recoveryCodeHashes: ["t"], at: after, events: []),
                      file: file, line: line)
        XCTAssertNotNil(try store.changePassword(ofAccount: owner.id, from: "owner-hash", to: "taker-hash", keeping: nil, events: []),
                        file: file, line: line)

        guard case .restored(let restored, let removed) = try reopen().undoEmailChange(linkHash: "undo-taken", at: after,
                                                                                        events: { _ in [] }) else {
            return XCTFail("restored", file: file, line: line)
        }
        XCTAssertEqual(removed, UndoneWaysIn(passkeys: 1, providers: 1, secondFactor: true, password: true), file: file, line: line)
        XCTAssertEqual(restored.email, "mine@example.org", file: file, line: line)
        XCTAssertEqual(restored.passwordHash, "owner-hash", "the password from before", file: file, line: line)
        XCTAssertEqual(try store.account(id: owner.id)?.passwordHash, "owner-hash", file: file, line: line)
        XCTAssertEqual(try store.passkeys(ofAccount: owner.id).map(\.credentialID), [[1, 7, 7]], "the owner's own passkey stays",
                       file: file, line: line)
        XCTAssertEqual(try store.providerLinks(ofAccount: owner.id).map(\.subject), ["owner"], file: file, line: line)
        XCTAssertNil(try store.secondFactor(ofAccount: owner.id), "the taker's factor is gone", file: file, line: line)
        XCTAssertFalse(try store.spendRecoveryCode(ofAccount: owner.id, hash: "t"), file: file, line: line)
    }

    /// Funnel counts (issue 59): instances add to the same minute's rows (a second "instance"
    /// is the reopened store), a read sums the periods since a date, and old periods go. A
    /// waiting sign-up keeps whether its form ran JavaScript.
    public func funnelCountsAddUpAcrossInstancesAndPeriods(file: StaticString = #filePath, line: UInt = #line) throws {
        let minute = Date(timeIntervalSince1970: 1_800_000_000)
        func series(_ metric: FunnelMetric, _ detail: String = "", bucket: String = "", javascript: Bool = true) -> FunnelSeries {
            FunnelSeries(metric: metric, detail: detail, bucket: bucket, language: "ar", credential: "passkey", javascript: javascript)
        }
        let other = try reopen()
        try store.addFunnelCounts([FunnelCount(series(.started), 3), FunnelCount(series(.abandonedUnmet, "password.length"), 1)],
                                  period: minute)
        try other.addFunnelCounts([FunnelCount(series(.started), 2), FunnelCount(series(.started, javascript: false), 1)],
                                  period: minute)
        try other.addFunnelCounts([FunnelCount(series(.requirementMet, "username.available", bucket: "5"), 4),
                                   FunnelCount(series(.requirementMet, "username.available", bucket: FunnelSeries.sumBucket), 9_500)],
                                  period: minute.addingTimeInterval(60))
        try store.addFunnelCounts([FunnelCount(series(.started), 7)], period: minute.addingTimeInterval(-3_600))
        try store.addFunnelCounts([], period: minute)

        let since = Set(try store.funnelCounts(since: minute))
        XCTAssertEqual(since, [FunnelCount(series(.started), 5), FunnelCount(series(.started, javascript: false), 1),
                               FunnelCount(series(.abandonedUnmet, "password.length"), 1),
                               FunnelCount(series(.requirementMet, "username.available", bucket: "5"), 4),
                               FunnelCount(series(.requirementMet, "username.available", bucket: FunnelSeries.sumBucket), 9_500)],
                       file: file, line: line)
        XCTAssertEqual(try other.funnelCounts(since: minute.addingTimeInterval(-3_600)).first { $0.series == series(.started) }?.value,
                       12, "an earlier period adds in when asked for", file: file, line: line)
        XCTAssertEqual(try store.removeFunnelCounts(before: minute), 1, file: file, line: line)
        XCTAssertEqual(try store.funnelCounts(since: .distantPast).first { $0.series == series(.started) }?.value, 5,
                       file: file, line: line)

        let now = Date()
        for ranJavaScript in [true, false] {
            let token = "funnel-\(ranJavaScript)"
            let pending = PendingSignup.starting(formToken: token, username: "js_\(ranJavaScript)", email: "js\(ranJavaScript)@example.org",
                                                 passwordHash: "x", profile: [:], language: "en", returnTo: "", codeHash: "c-\(token)",
                                                 linkHash: "l-\(token)", at: now, lifetime: 600, ranJavaScript: ranJavaScript)
            try store.startPendingSignup(pending, mail: OutboxEvent(id: "msg_\(token)", type: "mail.verify", body: "{}", createdAt: now, channel: .mail), at: now)
            XCTAssertEqual(try other.pendingSignup(formToken: token, at: now)?.ranJavaScript, ranJavaScript, file: file, line: line)
        }
    }
}
