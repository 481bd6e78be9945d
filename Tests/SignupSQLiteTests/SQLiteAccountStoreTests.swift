import AccountStoreTestSupport
import Foundation
import ReactiveValidation
import SignupDomain
import SignupSQLite
import XCTest
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// `SQLiteAccountStore` on a real database file, and `StoreAvailabilityChecker` over it.
final class SQLiteAccountStoreTests: XCTestCase {
    private var directory: URL!
    private var databasePath: String!

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("SQLiteAccountStoreTests-\(UUID().uuidString)", isDirectory: true)
        // A folder that does not exist yet: the store must create it.
        databasePath = directory.appendingPathComponent("nested/accounts.sqlite").path
    }

    override func tearDownWithError() throws {
        if let directory, FileManager.default.fileExists(atPath: directory.path) {
            try FileManager.default.removeItem(at: directory)
        }
        try super.tearDownWithError()
    }

    /// A store whose look-ups always fail, like a database that went away.
    private struct FailingStore: AccountStore {
        struct Failure: Error {}
        func isUsernameTaken(_ username: String, at now: Date) throws -> Bool { throw Failure() }
        func reserveUsernames(_ usernames: [String]) throws { throw Failure() }
        func createAccount(_ account: NewAccount) throws -> Account { throw Failure() }
        func account(named username: String) throws -> Account? { throw Failure() }
        func allAccounts() throws -> [Account] { throw Failure() }
        func isFormTokenUsed(_ formToken: String) throws -> Bool { throw Failure() }
        func checkReadiness() throws { throw Failure() }
        func secret(named name: String, createdBy make: () -> [UInt8]) throws -> [UInt8] { throw Failure() }
        func signingKeys() throws -> [SigningKey] { throw Failure() }
        func addSigningKey(_ key: SigningKey) throws { throw Failure() }
        func removeSigningKeys(ids: [String]) throws { throw Failure() }
        func storeAuthorizationCode(_ code: AuthorizationCode, keepingAtMost keep: Int) throws { throw Failure() }
        func redeemAuthorizationCode(hash: String, at now: Date, issuing tokens: TokenPair,
                                     if accepts: @escaping @Sendable (AuthorizationCode) -> Bool) throws -> GrantRedemption { throw Failure() }
        func rotateRefreshToken(hash: String, clientID: String, at now: Date, issuing tokens: TokenPair) throws -> GrantRedemption {
            throw Failure()
        }
        func accessToken(hash: String, at now: Date) throws -> LiveAccessToken? { throw Failure() }
        func token(hash: String, clientID: String, at now: Date) throws -> (grant: OpenIDGrant, isRefresh: Bool)? { throw Failure() }
        func revokeAccessToken(hash: String) throws { throw Failure() }
        func revokeGrant(id: String) throws -> Bool { throw Failure() }
        func removeExpiredGrants(at now: Date) throws -> Int { throw Failure() }
        func consent(ofAccount id: Int64, client clientID: String) throws -> ClientConsent? { throw Failure() }
        func recordConsent(ofAccount id: Int64, client clientID: String, scopes: [String], at date: Date, events: [OutboxEvent]) throws { throw Failure() }
        func consents(ofAccount id: Int64, at now: Date) throws -> [ClientConsent] { throw Failure() }
        func revokeClient(_ clientID: String, ofAccount id: Int64, events: [OutboxEvent]) throws -> Int { throw Failure() }
        func endGrantsOfEndedSessions(announcing announce: @escaping @Sendable (OpenIDGrant) -> OutboxEvent?) throws -> Int {
            throw Failure()
        }
        func startSignInSession(_ session: NewSignInSession) throws { throw Failure() }
        func startSignInSession(_ session: NewSignInSession, keepingAtMost keep: Int) throws -> [String] { throw Failure() }
        func signedInAccount(idHash: String, at now: Date, rules: SignInSessionRules) throws -> Account? { throw Failure() }
        func endSignInSession(idHash: String) throws { throw Failure() }
        func endSignInSessions(username: String) throws -> Int { throw Failure() }
        func removeEndedSignInSessions(at now: Date, rules: SignInSessionRules) throws -> Int { throw Failure() }
        func spendSharedTokens(bucket: String, key: String, cost: Double, rate: SharedBucketRate, at now: Date) throws -> Double { throw Failure() }
        func resetSharedTokens(bucket: String, key: String) throws { throw Failure() }
        func removeFullSharedBuckets(at now: Date) throws -> Int { throw Failure() }
        func addFunnelCounts(_ counts: [FunnelCount], period: Date) throws { throw Failure() }
        func funnelCounts(since: Date) throws -> [FunnelCount] { throw Failure() }
        func removeFunnelCounts(before date: Date) throws -> Int { throw Failure() }
        func claimDueEvents(channel: OutboxChannel, at now: Date, limit: Int, lease: TimeInterval) throws -> [ClaimedEvent] { throw Failure() }
        func markDelivered(eventID: String, attempts: Int, at now: Date) throws { throw Failure() }
        func scheduleRetry(eventID: String, attempts: Int, at next: Date, error: String) throws { throw Failure() }
        func park(eventID: String, attempts: Int, error: String) throws { throw Failure() }
        func outboxStatus(channel: OutboxChannel) throws -> OutboxStatus { throw Failure() }
        func removeDeliveredEvents(deliveredBefore date: Date) throws -> Int { throw Failure() }
        func startPendingSignup(_ pending: PendingSignup, mail: OutboxEvent, at now: Date) throws { throw Failure() }
        func pendingSignup(formToken: String, at now: Date) throws -> PendingSignup? { throw Failure() }
        func pendingSignup(linkHash: String, at now: Date) throws -> PendingSignup? { throw Failure() }
        func spendCodeTry(formToken: String, maximum: Int) throws -> Int? { throw Failure() }
        func replaceCode(formToken: String, codeHash: String, linkHash: String, sentAt: Date, expiresAt: Date,
                         mail: OutboxEvent) throws -> Bool { throw Failure() }
        func completePendingSignup(formToken: String, at now: Date, announce: Bool) throws -> Account? { throw Failure() }
        func cancelPendingSignup(formToken: String) throws { throw Failure() }
        func removeExpiredPendingSignups(at now: Date) throws -> Int { throw Failure() }
        func spendProof(_ challenge: String, until expiresAt: Date) throws -> Bool { throw Failure() }
        func removeExpiredProofs(at now: Date) throws -> Int { throw Failure() }
        func userHandle(ofAccount id: Int64) throws -> [UInt8] { throw Failure() }
        func account(withUserHandle handle: [UInt8]) throws -> Account? { throw Failure() }
        func addPasskey(_ passkey: Passkey, events: [OutboxEvent]) throws { throw Failure() }
        func passkey(credentialID: [UInt8]) throws -> Passkey? { throw Failure() }
        func passkeys(ofAccount id: Int64) throws -> [Passkey] { throw Failure() }
        func recordPasskeyUse(credentialID: [UInt8], signCount: UInt32, isBackedUp: Bool, at date: Date) throws -> Bool { throw Failure() }
        func isEmailTaken(_ email: String) throws -> Bool { throw Failure() }
        func startRecovery(_ recovery: AccountRecovery, mail: OutboxEvent?) throws { throw Failure() }
        func recovery(token: String, at now: Date) throws -> AccountRecovery? { throw Failure() }
        func recovery(linkHash: String, at now: Date) throws -> AccountRecovery? { throw Failure() }
        func spendRecoveryTry(token: String, maximum: Int, at now: Date) throws -> Int? { throw Failure() }
        func exchangeRecoveryCode(token: String, linkHash: String, at now: Date) throws -> Bool { throw Failure() }
        func completeRecovery(linkHash: String, passwordHash: String, at now: Date,
                              events: @Sendable (Account) -> [OutboxEvent]) throws -> CompletedRecovery? { throw Failure() }
        func removeExpiredRecoveries(at now: Date) throws -> Int { throw Failure() }
        func account(withProvedEmail email: String) throws -> Account? { throw Failure() }
        func account(id: Int64) throws -> Account? { throw Failure() }
        func signInSessions(ofAccount id: Int64, at now: Date, rules: SignInSessionRules) throws -> [SignInSessionSummary] { throw Failure() }
        func endSignInSession(publicID: String, ofAccount id: Int64) throws -> Bool { throw Failure() }
        func endSignInSessions(ofAccount id: Int64, keeping idHash: String?) throws -> Int { throw Failure() }
        func recordAuthentication(idHash: String, at date: Date) throws -> Bool { throw Failure() }
        func changePassword(ofAccount id: Int64, from expected: String, to newHash: String, keeping idHash: String?,
                            events: [OutboxEvent]) throws -> Int? { throw Failure() }
        func renamePasskey(credentialID: [UInt8], ofAccount id: Int64, to name: String) throws -> Bool { throw Failure() }
        func removePasskey(credentialID: [UInt8], ofAccount id: Int64, events: [OutboxEvent]) throws -> WayInRemoval { throw Failure() }
        func deleteAccount(id: Int64, reservingUsernameUntil until: Date, events: [OutboxEvent]) throws -> Bool { throw Failure() }
        func setAccountDisabled(id: Int64, at date: Date?, events: [OutboxEvent]) throws -> Int? { throw Failure() }
        func removeEndedUsernameReservations(at now: Date) throws -> Int { throw Failure() }
        func startEmailChange(_ change: EmailChange, mail: OutboxEvent?) throws { throw Failure() }
        func emailChange(ofAccount id: Int64, at now: Date) throws -> EmailChange? { throw Failure() }
        func spendEmailChangeTry(ofAccount id: Int64, maximum: Int, at now: Date) throws -> Int? { throw Failure() }
        func completeEmailChange(ofAccount id: Int64, at now: Date, undoLinkHash: String, undoUntil: Date,
                                 events: @Sendable (Account, String) -> [OutboxEvent]) throws -> EmailChangeCompletion { throw Failure() }
        func undoEmailChange(linkHash: String, at now: Date, events: @Sendable (Account) -> [OutboxEvent]) throws -> EmailChangeUndo? {
            throw Failure()
        }
        func removeExpiredEmailChanges(at now: Date) throws -> Int { throw Failure() }
        func startSecondFactorSetup(ofAccount id: Int64, sealedSecret: [UInt8], at date: Date) throws -> Bool { throw Failure() }
        func secondFactor(ofAccount id: Int64) throws -> SecondFactor? { throw Failure() }
        func enableSecondFactor(ofAccount id: Int64, step: Int64, recoveryCodeHashes: [String], at date: Date,
                                events: [OutboxEvent]) throws -> Bool { throw Failure() }
        func spendSecondFactorStep(ofAccount id: Int64, step: Int64) throws -> Bool { throw Failure() }
        func spendRecoveryCode(ofAccount id: Int64, hash: String) throws -> Bool { throw Failure() }
        func chargeSecondFactorCode(ofAccount id: Int64, lockout: SecondFactorLockout,
                                    notices: [Int: [OutboxEvent]]) throws -> Int? { throw Failure() }
        func clearSecondFactorFailures(ofAccount id: Int64) throws { throw Failure() }
        func replaceRecoveryCodes(ofAccount id: Int64, hashes: [String], events: [OutboxEvent]) throws -> Bool { throw Failure() }
        func removeSecondFactor(ofAccount id: Int64, events: [OutboxEvent]) throws -> Bool { throw Failure() }
        func account(linkedTo issuer: String, subject: String) throws -> Account? { throw Failure() }
        func providerLinks(ofAccount id: Int64) throws -> [ProviderLink] { throw Failure() }
        func linkProvider(_ link: NewProviderLink, toAccount id: Int64, at date: Date, events: [OutboxEvent]) throws { throw Failure() }
        func unlinkProvider(issuer: String, subject: String, fromAccount id: Int64, events: [OutboxEvent]) throws -> WayInRemoval {
            throw Failure()
        }
    }

    /// A store that counts look-ups, to see when they happen.
    private final class CountingStore: AccountStore, @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var lookups: Int {
            lock.lock(); defer { lock.unlock() }
            return count
        }
        func isUsernameTaken(_ username: String, at now: Date) throws -> Bool {
            lock.lock(); defer { lock.unlock() }
            count += 1
            return false
        }
        func reserveUsernames(_ usernames: [String]) throws {}
        func createAccount(_ account: NewAccount) throws -> Account { throw UnusedInTheseTests() }
        func account(named username: String) throws -> Account? { nil }
        func allAccounts() throws -> [Account] { [] }
        func isFormTokenUsed(_ formToken: String) throws -> Bool { false }
        func checkReadiness() throws {}
        func secret(named name: String, createdBy make: () -> [UInt8]) throws -> [UInt8] { make() }
        func signingKeys() throws -> [SigningKey] { [] }
        func addSigningKey(_ key: SigningKey) throws {}
        func removeSigningKeys(ids: [String]) throws {}
        func storeAuthorizationCode(_ code: AuthorizationCode, keepingAtMost keep: Int) throws {}
        func redeemAuthorizationCode(hash: String, at now: Date, issuing tokens: TokenPair,
                                     if accepts: @escaping @Sendable (AuthorizationCode) -> Bool) throws -> GrantRedemption { .unknown }
        func rotateRefreshToken(hash: String, clientID: String, at now: Date, issuing tokens: TokenPair) throws -> GrantRedemption {
            .unknown
        }
        func accessToken(hash: String, at now: Date) throws -> LiveAccessToken? { nil }
        func token(hash: String, clientID: String, at now: Date) throws -> (grant: OpenIDGrant, isRefresh: Bool)? { nil }
        func revokeAccessToken(hash: String) throws {}
        func revokeGrant(id: String) throws -> Bool { false }
        func removeExpiredGrants(at now: Date) throws -> Int { 0 }
        func consent(ofAccount id: Int64, client clientID: String) throws -> ClientConsent? { nil }
        func recordConsent(ofAccount id: Int64, client clientID: String, scopes: [String], at date: Date, events: [OutboxEvent]) throws {}
        func consents(ofAccount id: Int64, at now: Date) throws -> [ClientConsent] { [] }
        func revokeClient(_ clientID: String, ofAccount id: Int64, events: [OutboxEvent]) throws -> Int { 0 }
        func endGrantsOfEndedSessions(announcing announce: @escaping @Sendable (OpenIDGrant) -> OutboxEvent?) throws -> Int { 0 }
        func startSignInSession(_ session: NewSignInSession) throws {}
        func startSignInSession(_ session: NewSignInSession, keepingAtMost keep: Int) throws -> [String] { [] }
        func signedInAccount(idHash: String, at now: Date, rules: SignInSessionRules) throws -> Account? { nil }
        func endSignInSession(idHash: String) throws {}
        func endSignInSessions(username: String) throws -> Int { 0 }
        func removeEndedSignInSessions(at now: Date, rules: SignInSessionRules) throws -> Int { 0 }
        func spendSharedTokens(bucket: String, key: String, cost: Double, rate: SharedBucketRate, at now: Date) throws -> Double { rate.burst }
        func resetSharedTokens(bucket: String, key: String) throws {}
        func removeFullSharedBuckets(at now: Date) throws -> Int { 0 }
        func addFunnelCounts(_ counts: [FunnelCount], period: Date) throws {}
        func funnelCounts(since: Date) throws -> [FunnelCount] { [] }
        func removeFunnelCounts(before date: Date) throws -> Int { 0 }
        func claimDueEvents(channel: OutboxChannel, at now: Date, limit: Int, lease: TimeInterval) throws -> [ClaimedEvent] { [] }
        func markDelivered(eventID: String, attempts: Int, at now: Date) throws {}
        func scheduleRetry(eventID: String, attempts: Int, at next: Date, error: String) throws {}
        func park(eventID: String, attempts: Int, error: String) throws {}
        func outboxStatus(channel: OutboxChannel) throws -> OutboxStatus { OutboxStatus(pending: 0, parked: 0, oldestPendingCreatedAt: nil) }
        func removeDeliveredEvents(deliveredBefore date: Date) throws -> Int { 0 }
        func startPendingSignup(_ pending: PendingSignup, mail: OutboxEvent, at now: Date) throws {}
        func pendingSignup(formToken: String, at now: Date) throws -> PendingSignup? { nil }
        func pendingSignup(linkHash: String, at now: Date) throws -> PendingSignup? { nil }
        func spendCodeTry(formToken: String, maximum: Int) throws -> Int? { nil }
        func replaceCode(formToken: String, codeHash: String, linkHash: String, sentAt: Date, expiresAt: Date,
                         mail: OutboxEvent) throws -> Bool { false }
        func completePendingSignup(formToken: String, at now: Date, announce: Bool) throws -> Account? { nil }
        func cancelPendingSignup(formToken: String) throws {}
        func removeExpiredPendingSignups(at now: Date) throws -> Int { 0 }
        func spendProof(_ challenge: String, until expiresAt: Date) throws -> Bool { true }
        func removeExpiredProofs(at now: Date) throws -> Int { 0 }
        func userHandle(ofAccount id: Int64) throws -> [UInt8] { [] }
        func account(withUserHandle handle: [UInt8]) throws -> Account? { nil }
        func addPasskey(_ passkey: Passkey, events: [OutboxEvent]) throws {}
        func passkey(credentialID: [UInt8]) throws -> Passkey? { nil }
        func passkeys(ofAccount id: Int64) throws -> [Passkey] { [] }
        func recordPasskeyUse(credentialID: [UInt8], signCount: UInt32, isBackedUp: Bool, at date: Date) throws -> Bool { false }
        func isEmailTaken(_ email: String) throws -> Bool { false }
        func startRecovery(_ recovery: AccountRecovery, mail: OutboxEvent?) throws {}
        func recovery(token: String, at now: Date) throws -> AccountRecovery? { nil }
        func recovery(linkHash: String, at now: Date) throws -> AccountRecovery? { nil }
        func spendRecoveryTry(token: String, maximum: Int, at now: Date) throws -> Int? { nil }
        func exchangeRecoveryCode(token: String, linkHash: String, at now: Date) throws -> Bool { false }
        func completeRecovery(linkHash: String, passwordHash: String, at now: Date,
                              events: @Sendable (Account) -> [OutboxEvent]) throws -> CompletedRecovery? { nil }
        func removeExpiredRecoveries(at now: Date) throws -> Int { 0 }
        func account(withProvedEmail email: String) throws -> Account? { nil }
        func account(id: Int64) throws -> Account? { nil }
        func signInSessions(ofAccount id: Int64, at now: Date, rules: SignInSessionRules) throws -> [SignInSessionSummary] { [] }
        func endSignInSession(publicID: String, ofAccount id: Int64) throws -> Bool { false }
        func endSignInSessions(ofAccount id: Int64, keeping idHash: String?) throws -> Int { 0 }
        func recordAuthentication(idHash: String, at date: Date) throws -> Bool { false }
        func changePassword(ofAccount id: Int64, from expected: String, to newHash: String, keeping idHash: String?,
                            events: [OutboxEvent]) throws -> Int? { nil }
        func renamePasskey(credentialID: [UInt8], ofAccount id: Int64, to name: String) throws -> Bool { false }
        func removePasskey(credentialID: [UInt8], ofAccount id: Int64, events: [OutboxEvent]) throws -> WayInRemoval { .notFound }
        func deleteAccount(id: Int64, reservingUsernameUntil until: Date, events: [OutboxEvent]) throws -> Bool { false }
        func setAccountDisabled(id: Int64, at date: Date?, events: [OutboxEvent]) throws -> Int? { nil }
        func removeEndedUsernameReservations(at now: Date) throws -> Int { 0 }
        func startEmailChange(_ change: EmailChange, mail: OutboxEvent?) throws {}
        func emailChange(ofAccount id: Int64, at now: Date) throws -> EmailChange? { nil }
        func spendEmailChangeTry(ofAccount id: Int64, maximum: Int, at now: Date) throws -> Int? { nil }
        func completeEmailChange(ofAccount id: Int64, at now: Date, undoLinkHash: String, undoUntil: Date,
                                 events: @Sendable (Account, String) -> [OutboxEvent]) throws -> EmailChangeCompletion { .none }
        func undoEmailChange(linkHash: String, at now: Date, events: @Sendable (Account) -> [OutboxEvent]) throws -> EmailChangeUndo? { nil }
        func removeExpiredEmailChanges(at now: Date) throws -> Int { 0 }
        func startSecondFactorSetup(ofAccount id: Int64, sealedSecret: [UInt8], at date: Date) throws -> Bool { false }
        func secondFactor(ofAccount id: Int64) throws -> SecondFactor? { nil }
        func enableSecondFactor(ofAccount id: Int64, step: Int64, recoveryCodeHashes: [String], at date: Date,
                                events: [OutboxEvent]) throws -> Bool { false }
        func spendSecondFactorStep(ofAccount id: Int64, step: Int64) throws -> Bool { false }
        func spendRecoveryCode(ofAccount id: Int64, hash: String) throws -> Bool { false }
        func chargeSecondFactorCode(ofAccount id: Int64, lockout: SecondFactorLockout,
                                    notices: [Int: [OutboxEvent]]) throws -> Int? { nil }
        func clearSecondFactorFailures(ofAccount id: Int64) throws {}
        func replaceRecoveryCodes(ofAccount id: Int64, hashes: [String], events: [OutboxEvent]) throws -> Bool { false }
        func removeSecondFactor(ofAccount id: Int64, events: [OutboxEvent]) throws -> Bool { false }
        func account(linkedTo issuer: String, subject: String) throws -> Account? { nil }
        func providerLinks(ofAccount id: Int64) throws -> [ProviderLink] { [] }
        func linkProvider(_ link: NewProviderLink, toAccount id: Int64, at date: Date, events: [OutboxEvent]) throws {}
        func unlinkProvider(issuer: String, subject: String, fromAccount id: Int64, events: [OutboxEvent]) throws -> WayInRemoval {
            .notFound
        }
        struct UnusedInTheseTests: Error {}
    }

    /// Subscribes to one availability answer and waits for it (bounded, no sleeping).
    private func answer(_ publisher: AnyPublisher<RequirementState, Never>,
                        file: StaticString = #filePath, line: UInt = #line) -> [RequirementState] {
        let done = expectation(description: "availability answered")
        let lock = NSLock()
        var states: [RequirementState] = []
        let cancellable = publisher.sink(
            receiveCompletion: { _ in done.fulfill() },
            receiveValue: { state in
                lock.lock()
                states.append(state)
                lock.unlock()
            })
        wait(for: [done], timeout: 10)
        withExtendedLifetime(cancellable) {}
        lock.lock(); defer { lock.unlock() }
        return states
    }

    // MARK: Store

    private func contract() throws -> AccountStoreContract {
        let path = databasePath!
        return AccountStoreContract(store: try SQLiteAccountStore(path: path),
                                    reopen: { try SQLiteAccountStore(path: path) })
    }

    // The contract every engine keeps (PostgresAccountStoreTests runs the same).
    func testAFreshStoreHasNoNamesTaken() throws {
        try contract().aFreshStoreHasNoNamesTaken()
        XCTAssertTrue(FileManager.default.fileExists(atPath: databasePath), "the database file and its folder are created")
    }
    func testNamesAreTakenInCanonicalForm() throws { try contract().namesAreTakenInCanonicalForm() }
    func testSignedInSessionsLiveEndAndAreSwept() throws { try contract().signedInSessionsLiveEndAndAreSwept() }
    func testSharedBucketsAreSharedRefillAndAreSwept() throws { try contract().sharedBucketsAreSharedRefillAndAreSwept() }
    func testTheOutboxHoldsEachAccountsEventUntilItIsDelivered() throws { try contract().theOutboxHoldsEachAccountsEventUntilItIsDelivered() }
    func testPendingSignUpsHoldNamesUntilProvedOrExpired() throws { try contract().pendingSignUpsHoldNamesUntilProvedOrExpired() }
    func testOwnersSeeAndEndTheirSessions() throws { try contract().ownersSeeAndEndTheirSessions() }
    func testOwnersAndOperatorsChangeAccounts() throws { try contract().ownersAndOperatorsChangeAccounts() }
    func testSecondFactorsAcceptEachCodeOnce() throws { try contract().secondFactorsAcceptEachCodeOnce() }
    func testWrongSecondFactorCodesAreCountedInARowAndLock() throws {
        try contract().wrongSecondFactorCodesAreCountedInARowAndLock()
    }
    func testProvingANewAddressEndsTheOldOnesRecoveries() throws { try contract().provingANewAddressEndsTheOldOnesRecoveries() }
    func testUndoingAnAddressChangeTakesBackEveryWayInAddedSince() throws {
        try contract().undoingAnAddressChangeTakesBackEveryWayInAddedSince()
    }
    func testFunnelCountsAddUpAcrossInstancesAndPeriods() throws {
        try contract().funnelCountsAddUpAcrossInstancesAndPeriods()
    }
    func testNewSessionsEndTheLeastRecentlyUsedBeyondTheCap() throws {
        try contract().newSessionsEndTheLeastRecentlyUsedBeyondTheCap()
    }
    func testProviderIdentitiesLinkOneAccountEach() throws { try contract().providerIdentitiesLinkOneAccountEach() }
    func testAddressChangesWaitForTheirProofAndCanBeUndone() throws {
        try contract().addressChangesWaitForTheirProofAndCanBeUndone()
    }
    func testRecoveriesWorkOnceAndEndTheAccountsSessions() throws { try contract().recoveriesWorkOnceAndEndTheAccountsSessions() }
    func testAProofOfWorkIsSpentOnce() throws { try contract().aProofOfWorkIsSpentOnce() }
    func testPasskeysBelongToTheirAccounts() throws { try contract().passkeysBelongToTheirAccounts() }
    func testSignUpPasskeysArriveWithTheirAccounts() throws { try contract().signUpPasskeysArriveWithTheirAccounts() }
    func testReservingAgainSkipsNamesAlreadyThere() throws { try contract().reservingAgainSkipsNamesAlreadyThere() }
    func testAccountsReadBackAsStored() throws { try contract().accountsReadBackAsStored() }
    func testAFormCreatesOneAccount() throws { try contract().aFormCreatesOneAccount() }
    func testRaceForOneNameHasOneWinner() throws { try contract().raceForOneNameHasOneWinner() }
    func testASecretIsCreatedOnceAndShared() throws { try contract().aSecretIsCreatedOnceAndShared() }
    func testSigningKeysAreKeptSharedAndNeverReplaced() throws { try contract().signingKeysAreKeptSharedAndNeverReplaced() }
    func testOpenIDGrantsAreSpentOnceAndRevokedByReuse() throws { try contract().openIDGrantsAreSpentOnceAndRevokedByReuse() }
    func testOpenIDGrantsEndWithTheirSession() throws { try contract().openIDGrantsEndWithTheirSession() }
    func testReopeningKeepsTheData() throws { try contract().reopeningKeepsTheData() }

    func testCanonicalFormFoldsCaseWidthAndComposition() {
        XCTAssertEqual(Username.canonical("Alice"), "alice")
        XCTAssertEqual(Username.canonical("Ａｌｉｃｅ"), "alice")
        XCTAssertEqual(Username.canonical("Jose\u{301}"), Username.canonical("José"))
        XCTAssertNotEqual(Username.canonical("alice"), Username.canonical("alicia"))
    }

    // MARK: Availability checker

    func testCheckerAnswersUnmetForTakenAndMetForFreeNames() throws {
        let store = try SQLiteAccountStore(path: databasePath)
        try store.reserveUsernames(["Alice"])
        let checker = StoreAvailabilityChecker(store: store)

        XCTAssertEqual(answer(checker.availability(of: "alice")), [.unmet])
        XCTAssertEqual(answer(checker.availability(of: "Ａｌｉｃｅ")), [.unmet])
        XCTAssertEqual(answer(checker.availability(of: "alicia")), [.met])
    }

    func testCheckerAnswersPendingWhenTheStoreFails() {
        let checker = StoreAvailabilityChecker(store: FailingStore())
        XCTAssertEqual(answer(checker.availability(of: "alice")), [.pending])
    }

    func testCheckerLooksUpOnlyWhenSubscribedAndOncePerSubscription() {
        let store = CountingStore()
        let queue = DispatchQueue(label: "SQLiteAccountStoreTests.lookups")
        let checker = StoreAvailabilityChecker(store: store, queue: queue)

        let publisher = checker.availability(of: "alice")
        queue.sync {}   // anything already queued has run
        XCTAssertEqual(store.lookups, 0, "creating the publisher must not query the store")

        XCTAssertEqual(answer(publisher), [.met])
        XCTAssertEqual(store.lookups, 1)
        XCTAssertEqual(answer(publisher), [.met])
        XCTAssertEqual(store.lookups, 2, "each subscription is a fresh look-up")
    }

    func testReservedNamesAreTakenAfterTheSameLookUpAsUsedOnes() throws {
        let store = CountingStore()
        let checker = StoreAvailabilityChecker(store: store, isReserved: { FormPolicy(.classic).isReserved($0) })
        XCTAssertEqual(try checker.availabilityNow(of: "Postmaster"), .unmet)
        XCTAssertEqual(store.lookups, 1, "a reserved name costs the same query, so timing does not tell it apart")
        XCTAssertEqual(try checker.availabilityNow(of: "newcomer"), .met)
        XCTAssertEqual(store.lookups, 2)
    }
}
