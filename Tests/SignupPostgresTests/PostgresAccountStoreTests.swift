import AccountStoreTestSupport
import Foundation
import HTTPTestSupport
import SignupDomain
import SignupPostgres
import XCTest
import Locking

/// `PostgresAccountStore` against a real PostgreSQL on loopback: the store contract every
/// engine keeps, then what is PostgreSQL's own (URLs, an unreachable database, recovery).
final class PostgresAccountStoreTests: XCTestCase {
    private func contract() throws -> AccountStoreContract {
        let url = try PostgresTestCluster.shared().makeDatabase()
        let location = try PostgresLocation(url: url)
        return AccountStoreContract(store: try PostgresAccountStore(location: location),
                                    reopen: { try PostgresAccountStore(location: location) })
    }

    // MARK: The contract

    func testAFreshStoreHasNoNamesTaken() throws { try contract().aFreshStoreHasNoNamesTaken() }
    func testNamesAreTakenInCanonicalForm() throws { try contract().namesAreTakenInCanonicalForm() }
    func testReservingAgainSkipsNamesAlreadyThere() throws { try contract().reservingAgainSkipsNamesAlreadyThere() }
    func testAccountsReadBackAsStored() throws { try contract().accountsReadBackAsStored() }
    func testAFormCreatesOneAccount() throws { try contract().aFormCreatesOneAccount() }
    func testRaceForOneNameHasOneWinner() throws { try contract().raceForOneNameHasOneWinner() }
    func testASecretIsCreatedOnceAndShared() throws { try contract().aSecretIsCreatedOnceAndShared() }
    func testSigningKeysAreKeptSharedAndNeverReplaced() throws { try contract().signingKeysAreKeptSharedAndNeverReplaced() }
    func testOpenIDGrantsAreSpentOnceAndRevokedByReuse() throws { try contract().openIDGrantsAreSpentOnceAndRevokedByReuse() }
    func testOpenIDGrantsEndWithTheirSession() throws { try contract().openIDGrantsEndWithTheirSession() }
    func testReopeningKeepsTheData() throws { try contract().reopeningKeepsTheData() }
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

    // MARK: PostgreSQL's own

    func testTheSchemaIsMigratedOnceEvenWhenInstancesStartTogether() throws {
        let location = try PostgresLocation(url: try PostgresTestCluster.shared().makeDatabase())
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do {
                _ = try PostgresAccountStore(location: location)
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [], "every instance starts")
        let store = try PostgresAccountStore(location: location)
        XCTAssertNoThrow(try store.reserveUsernames(["alice"]))
        XCTAssertTrue(try store.isUsernameTaken("ALICE"))
    }

    func testURLsAreReadLikeLibpqAndBadOnesSayWhatIsWrong() throws {
        let full = try PostgresLocation(url: "postgresql://app:s%40cret@db.internal:6543/accounts?sslmode=require")
        XCTAssertEqual(full.host, "db.internal")
        XCTAssertEqual(full.port, 6543)
        XCTAssertEqual(full.username, "app")
        XCTAssertEqual(full.password, "s@cret", "percent-encoded passwords are decoded")
        XCTAssertEqual(full.database, "accounts")
        XCTAssertEqual(full.sslMode, .require)
        XCTAssertEqual(try PostgresLocation(url: "postgres://app@[::1]/db").host, "::1")
        XCTAssertEqual(try PostgresLocation(url: "postgres://app@h/db").port, 5432)
        XCTAssertEqual(try PostgresLocation(url: "postgres://app@h/db").sslMode, .prefer)

        let cases: [(String, String)] = [
            ("postgres://app:hunter2@/db", "names no host"),
            ("postgres://h/db", "names no user"),
            ("postgres://app:hunter2@h", "names no database"),
            ("postgres://app@h/db?sslmode=sometimes", "sslmode must be one of disable, prefer, require, verify-full"),
            ("postgres://app@h/db?timeout=3", "unknown parameter 'timeout'"),
        ]
        for (url, reason) in cases {
            XCTAssertThrowsError(try PostgresLocation(url: url), url) { error in
                let message = "\(error)"
                XCTAssertTrue(message.contains(reason), "\(url): \(message)")
                XCTAssertFalse(message.contains("hunter2"), "the password is never repeated: \(message)")
            }
        }
    }

    /// While the database is down every call fails within the bound with a `StorageFault`
    /// that says where and what; once it is back the same store works again, and nothing
    /// acknowledged before is lost.
    func testAnUnreachableDatabaseIsAStorageFaultAndTheStoreRecovers() throws {
        let cluster = try PostgresTestCluster()
        defer {
            cluster.stop()
            cluster.remove()
        }
        let location = try PostgresLocation(url: try cluster.makeDatabase())
        let store = try PostgresAccountStore(location: location, answerTimeout: 2)
        let kept = try store.createAccount(NewAccount(username: "kept", email: "k@example.com",
                                                      passwordHash: "x", formToken: "t1"))
        cluster.stop()

        let started = Date()
        XCTAssertThrowsError(try store.createAccount(NewAccount(username: "lost", email: "l@example.com",
                                                                passwordHash: "x", formToken: "t2"))) { error in
            let fault = error as? StorageFault
            XCTAssertNotNil(fault, "\(error)")
            XCTAssertTrue(fault?.reason.contains("PostgreSQL at 127.0.0.1:\(cluster.port)/") == true, "\(error)")
        }
        XCTAssertThrowsError(try store.checkReadiness()) { XCTAssertTrue($0 is StorageFault, "\($0)") }
        XCTAssertThrowsError(try store.isUsernameTaken("kept")) { XCTAssertTrue($0 is StorageFault, "\($0)") }
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "each call gives up within its bound")

        try cluster.start()
        let recovered = Condition.wait(timeout: 30) { (try? store.checkReadiness()) != nil }
        XCTAssertTrue(recovered, "the pool reconnects by itself: \(cluster.serverLog.suffix(500))")
        XCTAssertEqual(try store.account(named: "kept"), kept)
        XCTAssertNil(try store.account(named: "lost"), "the refused sign-up stored nothing")
        XCTAssertNoThrow(try store.createAccount(NewAccount(username: "after", email: "a@example.com",
                                                            passwordHash: "x", formToken: "t3")))
    }
}

/// A value behind a lock, for results gathered from several threads.
