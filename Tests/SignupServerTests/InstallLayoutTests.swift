import Foundation
import HTTPTestSupport
import XCTest

/// The layout `make install` makes (PREFIX/bin with the binary and its resource bundles,
/// PREFIX/share/livesignup with Public and Templates) runs from any directory, and the
/// shipped systemd unit is valid for it.
final class InstallLayoutTests: XCTestCase {
    private var prefix: URL!

    override func setUpWithError() throws {
        prefix = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-prefix-\(UUID().uuidString)")
        let bin = prefix.appendingPathComponent("bin")
        let share = prefix.appendingPathComponent("share/livesignup")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: share, withIntermediateDirectories: true)
        let products = ServerProcess.executable.deletingLastPathComponent()
        try FileManager.default.copyItem(at: ServerProcess.executable, to: bin.appendingPathComponent("signup-server"))
        for bundle in try FileManager.default.contentsOfDirectory(atPath: products.path) where bundle.hasSuffix(".resources") {
            try FileManager.default.copyItem(at: products.appendingPathComponent(bundle), to: bin.appendingPathComponent(bundle))
        }
        for folder in ["Public", "Templates"] {
            try FileManager.default.copyItem(at: TestServer.repositoryRoot.appendingPathComponent(folder),
                                             to: share.appendingPathComponent(folder))
        }
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: prefix)
    }

    func testTheInstalledBinaryServesItsInstalledAssetsFromAnyDirectory() async throws {
        // Mark the installed script, to see that it is the one served (not the checkout's).
        let script = prefix.appendingPathComponent("share/livesignup/Public/app.js")
        let marked = try String(contentsOf: script, encoding: .utf8) + "\n/* installed copy */\n"
        try marked.write(to: script, atomically: true, encoding: .utf8)

        let server = try ServerProcess(executable: prefix.appendingPathComponent("bin/signup-server"),
                                       workingDirectory: URL(fileURLWithPath: "/"))
        defer { server.removeData() }
        try await server.start()
        let page = try RawExchange.send(port: server.port, "GET", "/")
        XCTAssertEqual(page.status, 200)
        let path = try XCTUnwrap(page.body.firstMatch(of: #/src="(/static/app\.js\?v=[0-9a-f]+)"/#)?.1)
        let served = try RawExchange.send(port: server.port, "GET", String(path))
        XCTAssertTrue(served.body.contains("installed copy"))
        _ = await server.stop(with: SIGTERM)
    }

    func testTheSystemdUnitVerifies() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            throw Prerequisite.missing("systemd-analyze is not installed (make test installs Debian's systemd): the unit's check needs it")
        }
        let unit = try String(contentsOf: TestServer.repositoryRoot.appendingPathComponent("deploy/systemd/livesignup.service"),
                              encoding: .utf8)
            .replacingOccurrences(of: "ExecStart=/usr/local/bin/signup-server",
                                  with: "ExecStart=\(prefix.appendingPathComponent("bin/signup-server").path)")
        XCTAssertTrue(unit.contains("ExecStart=\(prefix.path)"), "the unit starts the installed binary")
        let copy = prefix.appendingPathComponent("livesignup.service")
        try unit.write(to: copy, atomically: true, encoding: .utf8)
        let verify = Process()
        verify.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
        verify.arguments = ["verify", copy.path]
        let output = Pipe()
        verify.standardError = output
        verify.standardOutput = output
        try verify.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        verify.waitUntilExit()
        XCTAssertEqual(verify.terminationStatus, 0, text)
        XCTAssertFalse(text.contains("livesignup.service:"), "no complaint about the unit: \(text)")
    }
}
