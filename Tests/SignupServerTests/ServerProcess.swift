import Foundation
import HTTPTestSupport
import XCTest

/// The real `signup-server` executable in a child process, for what only a process can
/// show: the printed port, signals, exit codes.
final class ServerProcess {
    static var executable: URL {
        // Tests run from the products folder the executable was built into.
        Bundle.main.bundleURL.appendingPathComponent("signup-server")
    }

    /// The environment that lets a test post forms without a proof of work.
    static let plainPosts = ["LIVESIGNUP_NO_JAVASCRIPT_SIGNUPS": "off", "LIVESIGNUP_PROOF_MAX_LEVEL": "0"]

    let process = Process()
    let databaseDirectory: URL
    private let output = Pipe()
    private let errors = Pipe()
    private let errorText = OutputBuffer()
    private(set) var port: UInt16 = 0

    /// - Parameters:
    ///   - databaseDirectory: reuse another run's data (e.g. after killing it).
    ///   - environment: added to the test's own environment.
    ///   - logLevel: nil passes no `--log-level` (to test the environment's).
    ///   - database: a `--database` value (a PostgreSQL URL) instead of a SQLite file in
    ///     `databaseDirectory`.
    init(executable: URL = ServerProcess.executable, arguments: [String] = [], databaseDirectory: URL? = nil,
         database: String? = nil, environment: [String: String] = [:],
         workingDirectory: URL = TestServer.repositoryRoot, logLevel: String? = "warning", passPort: Bool = true) throws {
        self.databaseDirectory = databaseDirectory ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("livesignup-process-\(UUID().uuidString)")
        process.executableURL = executable
        process.currentDirectoryURL = workingDirectory
        process.arguments = (passPort ? ["--port", "0"] : []) + (logLevel.map { ["--log-level", $0] } ?? [])
            + ["--database", database ?? self.databaseDirectory.appendingPathComponent("db.sqlite").path] + arguments
        // The servers these tests start ask for proofs of work (the default), but the tests
        // post plain forms and sign many people up from 127.0.0.1: the budget without
        // JavaScript is off and the price stays at its base, unless a test says otherwise.
        process.environment = ProcessInfo.processInfo.environment
            .merging(Self.plainPosts) { $1 }.merging(environment) { $1 }
        process.standardOutput = output
        process.standardError = errors
        let errorText = self.errorText
        errors.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { _ = errorText.append(data) }
        }
    }

    /// Runs the executable to the end (a command that exits: `--help`, a refused option, a
    /// port in use) and returns its exit status and what it printed.
    static func run(_ arguments: [String], environment: [String: String]? = nil)
        throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        // Not waitUntilExit(): it spins the calling thread's run loop, making one on a
        // cooperative-pool thread when called from an async test (see ProcessLauncher).
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try ProcessLauncher.shared.run(process)
        // Standard error on a thread of its own while standard output is read here: an output
        // larger than a pipe's buffer (`--experimental-dump-help`) would otherwise block the
        // process on one pipe while this waits for the other to end.
        let errorData = OutputBuffer()
        let errorsRead = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = errorData.append(errors.fileHandleForReading.readDataToEndOfFile())
            errorsRead.signal()
        }
        let outputText = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        errorsRead.wait()
        let errorText = errorData.text
        exited.wait()
        return (process.terminationStatus, outputText, errorText)
    }

    /// Everything the process wrote to standard error so far (its log).
    var log: String { errorText.text }
    /// The log as it grows, readable from a `@Sendable` wait.
    var logReader: @Sendable () -> String {
        let buffer = errorText
        return { buffer.text }
    }

    var databasePath: String { databaseDirectory.appendingPathComponent("db.sqlite").path }

    /// Starts the process and waits (bounded) for the line that announces its port.
    func start(file: StaticString = #filePath, line: UInt = #line) async throws {
        try launch()
        await waitUntilListening(timeout: 10, file: file, line: line)
    }

    private let announcement = OutputBuffer()
    private let announced = Occurrences()

    /// Starts the process without waiting for it to listen.
    func launch() throws {
        let buffer = announcement, announced = self.announced
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty,
                  let match = buffer.append(data).firstMatch(of: #/listening on http://[^:]+:(\d+)/#),
                  UInt16(match.1) != nil else { return }
            handle.readabilityHandler = nil
            announced.record()
        }
        try ProcessLauncher.shared.run(process)
    }

    /// Waits (bounded) for the line that announces the port, after `launch()`.
    func waitUntilListening(timeout: TimeInterval, file: StaticString = #filePath, line: UInt = #line) async {
        let listening = await announced.wait(timeout: timeout)
        port = announcement.text.firstMatch(of: #/listening on http://[^:]+:(\d+)/#).flatMap { UInt16($0.1) } ?? 0
        XCTAssertTrue(listening, "the server did not print its port", file: file, line: line)
    }

    /// Sends `signal` and waits (bounded) for the process to exit; returns whether it did.
    func stop(with signal: Int32) async -> Bool {
        let exited = Occurrences()
        process.terminationHandler = { _ in exited.record() }
        if !process.isRunning { exited.record() }
        kill(process.processIdentifier, signal)
        return await exited.wait(timeout: 10)
    }

    func removeData() {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: databaseDirectory)
    }
}

/// What the process printed so far; written by the pipe's handler thread.
private final class OutputBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var collected = ""

    var text: String { lock.withLock { collected } }

    func append(_ data: Data) -> String {
        lock.withLock {
            collected += String(decoding: data, as: UTF8.self)
            return collected
        }
    }
}
