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
}

private final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Int] = [:]
    func add(_ outcome: String) { lock.withLock { values[outcome, default: 0] += 1 } }
    var counts: [String: Int] { lock.withLock { values } }
}
