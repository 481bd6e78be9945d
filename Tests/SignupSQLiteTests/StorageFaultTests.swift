import AccountStoreTestSupport
import Foundation
import GRDB
import SignupDomain
import SignupSQLite
import XCTest

/// No acknowledged account is ever lost to a fault around the database file: a write into a
/// deleted or replaced file is refused (never reported as stored), and the store carries on
/// with the file at its path once the operator has put one back.
final class StorageFaultTests: XCTestCase {
    private var directory: URL!
    private var path: String { directory.appendingPathComponent("accounts.sqlite").path }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("StorageFaultTests-\(UUID().uuidString)")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func newAccount(_ name: String) -> NewAccount {
        NewAccount(username: name, email: "\(name)@example.com", passwordHash: "$argon2id$fake", formToken: "form-\(name)")
    }

    func testDeletedFolderRefusesWritesUntilTheFileIsBackAndNothingIsLost() throws {
        let store = try SQLiteAccountStore(path: path)
        _ = try store.createAccount(newAccount("before"))
        let backup = FileManager.default.temporaryDirectory.appendingPathComponent("backup-\(UUID().uuidString).sqlite")
        defer { try? FileManager.default.removeItem(at: backup) }
        try FileManager.default.copyItem(atPath: path, toPath: backup.path)

        try FileManager.default.removeItem(at: directory)
        XCTAssertThrowsError(try store.createAccount(newAccount("during"))) { error in
            XCTAssertTrue(error is StorageFault, "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "no empty database was made in its place")

        // The operator restores the file: sign-ups work again, into that file.
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: backup.path, toPath: path)
        _ = try store.createAccount(newAccount("after"))

        let reopened = try SQLiteAccountStore(path: path)
        XCTAssertEqual(try reopened.allAccounts().map(\.username), ["before", "after"],
                       "the refused account is absent, every acknowledged one present")
    }

    func testAReplacedFileIsFollowedNotWrittenThroughTheOldDescriptor() throws {
        let store = try SQLiteAccountStore(path: path)
        _ = try store.createAccount(newAccount("old"))
        // Another database moved into place (e.g. a restore), atomically, as `mv` does.
        let other = directory.appendingPathComponent("other.sqlite").path
        _ = try SQLiteAccountStore(path: other).createAccount(newAccount("restored"))
        XCTAssertEqual(rename(other, path), 0)

        _ = try store.createAccount(newAccount("new"))
        XCTAssertEqual(try SQLiteAccountStore(path: path).allAccounts().map(\.username), ["restored", "new"])
    }

    func testAPathThatCannotBeOpenedGivesStorageFaultNotACrash() throws {
        let store = try SQLiteAccountStore(path: path)
        try FileManager.default.removeItem(atPath: path)
        // Root can write to read-only files, so make the path unusable another way.
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        XCTAssertThrowsError(try store.createAccount(newAccount("x"))) { XCTAssertTrue($0 is StorageFault, "\($0)") }
        XCTAssertThrowsError(try store.isUsernameTaken("x")) { XCTAssertTrue($0 is StorageFault, "\($0)") }
    }

    func testNoSharedMemoryFileExistsForAnotherProcessToBreak() throws {
        let store = try SQLiteAccountStore(path: path)
        _ = try store.createAccount(newAccount("one"))
        // WAL keeps its index in a memory-mapped -shm file; truncating it under a running
        // process crashed it with SIGBUS. The rollback journal maps nothing.
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-shm"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-wal"))
        let mode = try DatabaseQueue(path: path).read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }
        XCTAssertEqual(mode, "delete")
        // A hostile -shm file next to it changes nothing.
        _ = FileManager.default.createFile(atPath: path + "-shm", contents: Data())
        _ = try store.createAccount(newAccount("two"))
        XCTAssertEqual(try store.allAccounts().count, 2)
    }
}
