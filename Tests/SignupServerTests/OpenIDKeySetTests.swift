import Foundation
import HTTPTestSupport
import XCTest

/// Issue 56, its first part: the key set LiveSignup publishes as an OpenID provider, read by
/// joserfc (a JOSE library we did not write): a first ES256 key at the first start, the next
/// one from `signup-server keys rotate` published at once (without a restart) and signing a
/// day later, the same set from every instance on the store.
final class OpenIDKeySetTests: XCTestCase {
    private func keySet(_ port: UInt16) throws -> (RawExchange, [String]) {
        let exchange = try RawExchange.send(port: port, from: "127.0.0.1", "GET", "/.well-known/jwks.json")
        return (exchange, try Self.readByJoserfc(exchange.body))
    }

    /// Each key as joserfc imports it: "kid EC P-256 ES256 public".
    static func readByJoserfc(_ json: String) throws -> [String] {
        try Prerequisite.python(module: "joserfc")
        let script = """
            import json, sys
            from joserfc.jwk import KeySet
            for key in KeySet.import_key_set(json.load(sys.stdin)).keys:
                print(key.kid, key.key_type, key.get("crv"), key.get("alg"), "private" if key.is_private else "public")
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try ProcessLauncher.shared.run(process)
        input.fileHandleForWriting.write(Data(json.utf8))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(problem.isEmpty, "joserfc refused the key set: \(problem)")
        return text.split(separator: "\n").map(String.init)
    }

    func testTheKeySetHoldsAnES256KeyAndARotatedOneBeforeItSigns() async throws {
        let server = try ServerProcess()
        defer { server.removeData() }
        try await server.start()
        let (first, keys) = try keySet(server.port)
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.headers["cache-control"], "public, max-age=300")
        XCTAssertEqual(keys.count, 1, first.body)
        let kid = try XCTUnwrap(keys.first?.split(separator: " ").first).description
        XCTAssertEqual(keys.first, "\(kid) EC P-256 ES256 public", "a public key only")
        XCTAssertFalse(first.body.contains("\"d\""), "no private part is published")

        let rotated = try ServerProcess.run(["keys", "rotate", "--database", server.databasePath])
        XCTAssertEqual(rotated.status, 0, rotated.errors)
        let (_, both) = try keySet(server.port)
        XCTAssertEqual(both.count, 2, "the next key is published at once, by the running server")
        XCTAssertTrue(both.contains("\(kid) EC P-256 ES256 public"), "the signing key stays")
        let listed = try ServerProcess.run(["keys", "list", "--database", server.databasePath]).output
        XCTAssertTrue(listed.contains("\(kid)  ES256") && listed.contains("  signing"), listed)
        XCTAssertTrue(listed.contains("published, signs later"), listed)

        // Another instance on the same store publishes the same set.
        let second = try ServerProcess(databaseDirectory: server.databaseDirectory)
        try await second.start()
        XCTAssertEqual(Set(try keySet(second.port).1), Set(both))
        _ = await second.stop(with: SIGTERM)
        _ = await server.stop(with: SIGTERM)
    }
}
