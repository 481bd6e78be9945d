import Foundation
import GRDB
import SignupDomain
@testable import SignupSQLite
import XCTest

/// A database from before issue 43 keeps its signed-in sessions through the migration that
/// lets owners see them: each gets a handle, counts as proved when it began, and shows no
/// device or network (nothing was recorded then).
final class SessionMigrationTests: XCTestCase {
    func testSessionsFromBeforeTheMigrationKeepWorkingAndGetHandles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("SessionMigration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("old.sqlite").path
        let began = Date(timeIntervalSince1970: 1_800_000_000)
        do {
            let old = try DatabaseQueue(path: path)
            try SQLiteAccountStore.migrator.migrate(old, upTo: "v13: account recoveries")
            try old.write { db in
                try db.execute(sql: """
                    INSERT INTO users (username, username_canonical, email, password_hash, form_token, profile, created_at)
                    VALUES ('Early', 'early', 'early@example.org', 'h', 'early-form', '{}', ?)
                    """, arguments: [began])
                for hash in ["h-one", "h-two"] {
                    try db.execute(sql: """
                        INSERT INTO sign_in_sessions (id_hash, user_id, created_at, expires_at, last_seen_at)
                        VALUES (?, 1, ?, ?, ?)
                        """, arguments: [hash, began, began.addingTimeInterval(86_400), began])
                }
            }
            try old.close()
        }
        let store = try SQLiteAccountStore(path: path)
        let rules = SignInSessionRules(idleTimeout: 3600)
        XCTAssertEqual(try store.signedInAccount(idHash: "h-one", at: began.addingTimeInterval(60), rules: rules)?.username, "Early")
        let sessions = try store.signInSessions(ofAccount: 1, at: began.addingTimeInterval(60), rules: rules)
        XCTAssertEqual(Set(sessions.map(\.idHash)), ["h-one", "h-two"])
        for session in sessions {
            XCTAssertEqual(session.publicID.count, 16, session.publicID)
            XCTAssertTrue(session.publicID.allSatisfy(\.isHexDigit), session.publicID)
            XCTAssertEqual(session.authenticatedAt, began)
            XCTAssertEqual([session.device, session.network], ["", ""])
        }
        XCTAssertNotEqual(sessions[0].publicID, sessions[1].publicID)
    }
}
